import { EksError, invalidParam } from './errors';
import {
  CLUSTER_SUBNETS,
  OUT_OF_BAND_STATES,
  type OutOfBandState,
  type SimNodegroup,
  type SimUpdate,
  type Simulator,
} from './state';
import { checkNodegroupName, checkTags, validateCreate, validateUpdate } from './validate';

/** EKS REST-JSON routes (apiVersion 2017-11-01) for the operations llmcap uses, answered as AWS answers them. */

export interface EksRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  body: Record<string, unknown>;
}

export interface EksRoute {
  operation: string;
  handle: () => Record<string, unknown>;
}

/** JSON numbers of epoch seconds with a fraction, as the EKS API sends every timestamp. */
const epoch = (ms: number) => ms / 1000;

export function renderNodegroup(sim: Simulator, ng: SimNodegroup, opts: { withResources?: boolean } = {}) {
  const { clusterName, clusterVersion } = sim.opts;
  const i = ng.input;
  return {
    nodegroupName: ng.name,
    nodegroupArn: ng.arn,
    clusterName,
    version: clusterVersion,
    releaseVersion: i.releaseVersion ?? `${clusterVersion}.7-20260105`,
    createdAt: epoch(ng.createdAt),
    modifiedAt: epoch(ng.modifiedAt),
    status: sim.status(ng),
    capacityType: i.capacityType ?? 'ON_DEMAND',
    scalingConfig: { ...ng.scaling },
    instanceTypes: ng.instanceTypes,
    subnets: i.subnets,
    remoteAccess: i.remoteAccess ?? null,
    amiType: i.amiType ?? (i.launchTemplate ? 'CUSTOM' : 'AL2023_x86_64_STANDARD'),
    nodeRole: i.nodeRole,
    labels: ng.labels,
    taints: ng.taints,
    // The create response comes before the ASG exists; every describe after it names the ASG.
    resources:
      opts.withResources === false
        ? null
        : { autoScalingGroups: [{ name: ng.asg.name }], remoteAccessSecurityGroup: null },
    diskSize: i.launchTemplate ? null : (i.diskSize ?? 20),
    health: { issues: ng.issues.map((x) => ({ ...x, resourceIds: [...x.resourceIds] })) },
    updateConfig: ng.updateConfig,
    nodeRepairConfig: i.nodeRepairConfig ?? null,
    launchTemplate: i.launchTemplate ?? null,
    tags: { ...ng.tags },
  };
}

export function renderUpdate(u: SimUpdate) {
  return {
    id: u.id,
    status: u.status,
    type: u.type,
    params: u.params,
    createdAt: epoch(u.createdAt),
    errors: [],
  };
}

/** A node group someone else made, for the admin endpoint: `POST /_sim/nodegroups`. */
export interface OutOfBandNodegroup {
  name: string;
  /** Their tags; default none. */
  tags?: Record<string, string>;
  /** Default ACTIVE. */
  status?: OutOfBandState;
  instanceType?: string;
  desiredSize?: number;
  maxSize?: number;
  subnets?: string[];
}

/** Validates like CreateNodegroup (name, tags, sizes), then puts the group straight into its state. */
export function createOutOfBand(sim: Simulator, spec: OutOfBandNodegroup): SimNodegroup {
  if (typeof spec !== 'object' || spec === null) throw new Error('body must be {"name": ..., "tags": {...}}');
  const status = spec.status ?? 'ACTIVE';
  if (!OUT_OF_BAND_STATES.includes(status))
    throw new Error(`status must be one of ${OUT_OF_BAND_STATES.join(', ')}`);
  const desiredSize = spec.desiredSize ?? 1;
  const input = validateCreate(
    {
      nodegroupName: spec.name,
      subnets: spec.subnets ?? CLUSTER_SUBNETS.slice(0, 2),
      nodeRole: `arn:aws:iam::${sim.opts.accountId}:role/not-llmcap-node`,
      scalingConfig: { minSize: 0, maxSize: spec.maxSize ?? Math.max(desiredSize, 1), desiredSize },
      instanceTypes: [spec.instanceType ?? 'm7i.large'],
      ...(spec.tags ? { tags: spec.tags } : {}),
    },
    { clusterVersion: sim.opts.clusterVersion, nodesQuota: sim.opts.limits.nodesPerNodegroup },
  );
  return sim.createOutOfBand(input, status);
}

function renderCluster(sim: Simulator) {
  const { clusterName, clusterVersion, region, accountId } = sim.opts;
  return {
    name: clusterName,
    arn: `arn:aws:eks:${region}:${accountId}:cluster/${clusterName}`,
    createdAt: epoch(sim.clusterCreatedAt),
    version: clusterVersion,
    endpoint:
      sim.clusterAccess?.endpoint ??
      `https://0123456789ABCDEF0123456789ABCDEF.gr7.${region}.eks.amazonaws.com`,
    roleArn: `arn:aws:iam::${accountId}:role/${clusterName}-cluster`,
    resourcesVpcConfig: {
      subnetIds: CLUSTER_SUBNETS,
      securityGroupIds: [],
      clusterSecurityGroupId: 'sg-0a1b2c3d4e5f60001',
      vpcId: 'vpc-0a1b2c3d4e5f60001',
      endpointPublicAccess: true,
      endpointPrivateAccess: true,
      publicAccessCidrs: ['0.0.0.0/0'],
    },
    kubernetesNetworkConfig: { serviceIpv4Cidr: '10.100.0.0/16', ipFamily: 'ipv4' },
    logging: {
      clusterLogging: [
        { types: ['api', 'audit', 'authenticator', 'controllerManager', 'scheduler'], enabled: false },
      ],
    },
    identity: {
      oidc: { issuer: `https://oidc.eks.${region}.amazonaws.com/id/0123456789ABCDEF0123456789ABCDEF` },
    },
    status: 'ACTIVE',
    certificateAuthority: {
      data:
        sim.clusterAccess?.caData ??
        Buffer.from('llmcap-local cloud simulator: no real CA').toString('base64'),
    },
    platformVersion: 'eks.1',
    tags: {},
    health: { issues: [] },
    accessConfig: { authenticationMode: 'API_AND_CONFIG_MAP' },
  };
}

const segs = (path: string) =>
  path
    .split('/')
    .filter((s) => s !== '')
    .map((s) => decodeURIComponent(s));

/** Matches a request to an operation; the handler runs later, after fault injection had its say. */
export function routeEks(sim: Simulator, req: EksRequest): EksRoute | undefined {
  const p = segs(req.path);
  const m = req.method;
  if (p[0] === 'tags' && p.length === 2) return routeTags(sim, req, p[1] as string);
  if (p[0] !== 'clusters') return undefined;
  if (p.length === 1 && m === 'GET')
    return {
      operation: 'ListClusters',
      handle: () => ({ clusters: [sim.opts.clusterName], nextToken: null }),
    };
  const cluster = p[1] as string;
  const needCluster = () => {
    if (cluster !== sim.opts.clusterName)
      throw new EksError('ResourceNotFoundException', `No cluster found for name: ${cluster}.`, {
        clusterName: cluster,
      });
  };
  const op = (operation: string, fn: () => Record<string, unknown>): EksRoute => ({
    operation,
    handle: () => {
      needCluster();
      return fn();
    },
  });
  if (p.length === 2 && m === 'GET') return op('DescribeCluster', () => ({ cluster: renderCluster(sim) }));
  if (p[2] === 'node-groups') {
    if (p.length === 3 && m === 'POST') return op('CreateNodegroup', () => createNodegroup(sim, req.body));
    if (p.length === 3 && m === 'GET') return op('ListNodegroups', () => listNodegroups(sim, req.query));
    const name = p[3] as string;
    if (p.length === 4 && m === 'GET')
      return op('DescribeNodegroup', () => ({ nodegroup: renderNodegroup(sim, sim.require(name)) }));
    if (p.length === 4 && m === 'DELETE')
      return op('DeleteNodegroup', () => {
        const ng = sim.require(name);
        sim.delete(ng);
        return { nodegroup: renderNodegroup(sim, ng) };
      });
    if (p.length === 5 && m === 'POST' && p[4] === 'update-config')
      return op('UpdateNodegroupConfig', () => updateNodegroupConfig(sim, name, req.body));
  }
  if (p[2] === 'updates' && p.length === 4 && m === 'GET')
    return op('DescribeUpdate', () => describeUpdate(sim, p[3] as string, req.query.get('nodegroupName')));
  return undefined;
}

/**
 * `/tags/{resourceArn}` for node group ARNs: GET ListTagsForResource, POST TagResource `{tags}`, DELETE
 * UntagResource `?tagKeys=`. These operations answer BadRequestException and NotFoundException, not the
 * node-group exceptions.
 */
function routeTags(sim: Simulator, req: EksRequest, arn: string): EksRoute | undefined {
  if (req.method === 'GET')
    return { operation: 'ListTagsForResource', handle: () => ({ tags: { ...sim.byArn(arn).tags } }) };
  if (req.method === 'POST')
    return {
      operation: 'TagResource',
      handle: () => {
        const ng = sim.byArn(arn);
        const tags = req.body.tags;
        if (tags === undefined || tags === null || Object.keys(tags as object).length === 0)
          throw new EksError('BadRequestException', 'tags must contain at least one tag');
        asBadRequest(() => checkTags(tags));
        sim.tag(ng, tags as Record<string, string>);
        return {};
      },
    };
  if (req.method === 'DELETE')
    return {
      operation: 'UntagResource',
      handle: () => {
        const ng = sim.byArn(arn);
        const keys = req.query.getAll('tagKeys');
        if (keys.length === 0)
          throw new EksError('BadRequestException', 'tagKeys must contain at least one key');
        sim.untag(ng, keys);
        return {};
      },
    };
  return undefined;
}

function asBadRequest(check: () => void): void {
  try {
    check();
  } catch (e) {
    if (e instanceof EksError) throw new EksError('BadRequestException', e.message);
    throw e;
  }
}

function createNodegroup(sim: Simulator, body: Record<string, unknown>) {
  const replay = sim.replay('CreateNodegroup', body.clientRequestToken, body);
  if (replay) return replay;
  const input = validateCreate(body, {
    clusterVersion: sim.opts.clusterVersion,
    nodesQuota: sim.opts.limits.nodesPerNodegroup,
  });
  const ng = sim.create(input);
  const first = { nodegroup: renderNodegroup(sim, ng, { withResources: false }) };
  // A retry with the same token gets the node group as it is now, or the first answer once it is gone.
  sim.remember('CreateNodegroup', body.clientRequestToken, body, () =>
    sim.get(ng.name) === ng ? { nodegroup: renderNodegroup(sim, ng) } : first,
  );
  return first;
}

function updateNodegroupConfig(sim: Simulator, name: string, body: Record<string, unknown>) {
  const ng = sim.require(name);
  const replay = sim.replay(`UpdateNodegroupConfig/${name}`, body.clientRequestToken, body);
  if (replay) return replay;
  const { input, merged } = validateUpdate(body, ng.scaling, sim.opts.limits.nodesPerNodegroup);
  const upd = sim.update(ng, input, merged);
  sim.remember(`UpdateNodegroupConfig/${name}`, body.clientRequestToken, body, () => ({
    update: renderUpdate(upd),
  }));
  return { update: renderUpdate(upd) };
}

function listNodegroups(sim: Simulator, q: URLSearchParams) {
  const rawMax = q.get('maxResults');
  let max = 100;
  if (rawMax !== null) {
    max = Number(rawMax);
    if (!Number.isInteger(max) || max < 1 || max > 100)
      throw invalidParam('maxResults must be between 1 and 100', { clusterName: sim.opts.clusterName });
  }
  let after = -1;
  const token = q.get('nextToken');
  if (token !== null && token !== '') {
    const decoded = /^ng:(\d+)$/.exec(Buffer.from(token, 'base64url').toString('utf8'));
    if (!decoded) throw invalidParam('The nextToken is invalid', { clusterName: sim.opts.clusterName });
    after = Number(decoded[1]);
  }
  const rest = sim.list().filter((ng) => ng.seq > after);
  const page = rest.slice(0, max);
  const last = page[page.length - 1];
  return {
    nodegroups: page.map((ng) => ng.name),
    nextToken: rest.length > max && last ? Buffer.from(`ng:${last.seq}`).toString('base64url') : null,
  };
}

function describeUpdate(sim: Simulator, updateId: string, nodegroupName: string | null) {
  const notFound = () =>
    new EksError('ResourceNotFoundException', `No update found for ID: ${updateId}`, {
      clusterName: sim.opts.clusterName,
      ...(nodegroupName ? { nodegroupName } : {}),
    });
  // Node group updates live under their node group: without nodegroupName EKS looks at cluster updates only.
  if (!nodegroupName) throw notFound();
  checkNodegroupName(nodegroupName);
  const ng = sim.require(nodegroupName);
  const upd = ng.updates.get(updateId);
  if (!upd) throw notFound();
  return { update: renderUpdate(upd) };
}
