import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type K8sSim, type K8sSimConfig, startK8sSim, type TrafficConfig } from '../k8s-sim';
import { AsgError, asgErrorXml, handleQuery, isQueryRequest } from './autoscaling';
import { serveAwsData } from './aws-data';
import { type Clock, DrivenClock, isDrivenClock, RealClock } from './clock';
import { CLOUDWATCH_TARGET, CloudWatchError, CloudWatchService } from './cloudwatch';
import {
  checkFaults,
  DEFAULT_DURATIONS,
  DEFAULT_LIMITS,
  type FaultConfig,
  loadConfigFile,
  type SimConfigFile,
} from './config';
import { createOutOfBand, type OutOfBandNodegroup, renderNodegroup, renderUpdate, routeEks } from './eks';
import { EksError } from './errors';
import { SERVICE_QUOTAS_TARGET, ServiceQuotasError, ServiceQuotasService } from './service-quotas';
import { SNS_ACTIONS, SNS_VERSION, SnsError, SnsService } from './sns';
import { type SimEvent, Simulator } from './state';

export { type Clock, DrivenClock, RealClock } from './clock';
export type { AlarmStateChange, CloudWatchService, SimAlarm } from './cloudwatch';
export type { Durations, FaultConfig, LaunchFailureRule, Limits, SimConfigFile } from './config';
export { DEFAULT_DURATIONS, DEFAULT_LIMITS } from './config';
export type { OutOfBandNodegroup } from './eks';
export type { Delivery, SnsService } from './sns';
export type { SimEvent } from './state';

/** A config file's options (port, time scale, seed, faults, cluster, durations, limits), and what only code passes. */
export interface CloudSimOptions extends SimConfigFile {
  host?: string;
  /** Default: the wall clock. Pass a DrivenClock to move time by hand. */
  clock?: Clock;
  /**
   * The clock CloudWatch and SNS run on (metric timestamps, alarm evaluations, notification times); default
   * `clock`. The local control plane's tests drive this one and leave EKS on the scaled wall clock.
   */
  metricsClock?: Clock;
  /** JSON or YAML file with any of these options (code options win). */
  configFile?: string;
  /** Called with one line per API request; default silent. */
  log?: (line: string) => void;
  /** The cluster's Kubernetes API (docs/k8s-sim.md); `false` leaves it out. */
  kubernetes?: K8sSimConfig | false;
}

export interface SimStateView {
  now: string;
  clock: 'driven' | 'real';
  seed: number;
  timeScale: number;
  cluster: string;
  region: string;
  faults: FaultConfig;
  nodegroups: {
    name: string;
    status: string;
    scalingConfig: { minSize: number; maxSize: number; desiredSize: number };
    health: { issues: { code?: string; message?: string; resourceIds: string[] }[] };
    tags: Record<string, string>;
    autoScalingGroup: {
      name: string;
      desiredCapacity: number;
      instances: { id: string; type: string; az: string; lifecycleState: string }[];
    };
    updates: ReturnType<typeof renderUpdate>[];
  }[];
  pendingEvents: { at: string; label: string }[];
  alarms: { name: string; state: string; reason: string; updatedAt: string }[];
  topics: { arn: string; subscriptions: { protocol: string; endpoint: string; status: string }[] }[];
}

export interface CloudSimAdmin {
  state(): SimStateView;
  getFaults(): FaultConfig;
  /** Replaces every fault setting. */
  setFaults(f: FaultConfig): void;
  /** Merges top-level fault settings into the current ones. */
  patchFaults(f: FaultConfig): void;
  /** Deletes a node group and its ASG at once, as if someone used the console; false if it did not exist. */
  deleteNodegroup(name: string): boolean;
  /** Creates a node group someone else owns (their tags), already in the given state; see createOutOfBand. */
  createNodegroup(spec: OutOfBandNodegroup): SimStateView['nodegroups'][number];
  /** Forgets every node group, update and token; faults go back to the configured ones. */
  reset(): void;
  /** The Service Quotas values answered, by quota code, null where none is applied (docs/cloud-sim.md). */
  getQuotas(): Record<string, number | null>;
  /**
   * Sets some of them, null for "no applied value" (only the default is answered); the EKS ones are also the
   * limits the simulated EKS enforces.
   */
  setQuotas(values: Record<string, number | null>): void;
  /**
   * EC2 reclaims a Spot instance (issue 32 §4): the "EC2 Spot Instance Interruption Warning" event goes to the
   * event targets (onEvent) now, and the instance is terminated two minutes (scaled) later.
   */
  interruptSpot(instanceId: string): SimEvent;
}

export interface CloudSim {
  endpoint: string;
  port: number;
  clusterName: string;
  region: string;
  clock: Clock;
  metricsClock: Clock;
  seed: number;
  admin: CloudSimAdmin;
  /** CloudWatch: alarms, metrics, EMF ingestion (putLogEvents), state changes (onStateChange). */
  cloudwatch: CloudWatchService;
  /** SNS: topics, subscriptions, deliveries; drain() waits for the HTTP deliveries in flight. */
  sns: SnsService;
  /** The simulated cluster's API server (DescribeCluster's endpoint), unless started with kubernetes: false. */
  kubernetes?: K8sSim;
  /** Follows the events AWS services send to EventBridge (EC2's Spot warnings); returns the unsubscribe. */
  onEvent(target: (e: SimEvent) => void): () => void;
  stop(): Promise<void>;
}

export async function startCloudSim(opts: CloudSimOptions = {}): Promise<CloudSim> {
  const file = opts.configFile ? loadConfigFile(opts.configFile) : {};
  const clock = opts.clock ?? new RealClock();
  const seed = opts.seed ?? file.seed ?? Math.floor(Math.random() * 2 ** 31);
  const timeScale = opts.timeScale ?? file.timeScale ?? 1;
  if (!(timeScale > 0)) throw new Error(`timeScale must be > 0, got ${timeScale}`);
  const initialFaults = checkFaults(structuredClone(opts.faults ?? file.faults ?? {}));
  const region = opts.region ?? file.region ?? 'us-east-1';
  const accountId = opts.accountId ?? file.accountId ?? '000000000000';
  const sim = new Simulator({
    clock,
    seed,
    timeScale,
    durations: { ...DEFAULT_DURATIONS, ...file.durations, ...opts.durations },
    limits: { ...DEFAULT_LIMITS, ...file.limits, ...opts.limits },
    faults: structuredClone(initialFaults),
    clusterName: opts.clusterName ?? file.clusterName ?? 'llmcap-local',
    clusterVersion: opts.clusterVersion ?? file.clusterVersion ?? '1.33',
    region,
    accountId,
  });
  const log = opts.log ?? (() => {});
  const metricsClock = opts.metricsClock ?? clock;
  let endpoint = '';
  const sns = new SnsService({ clock: metricsClock, region, accountId, endpoint: () => endpoint, log });
  const cloudwatch = new CloudWatchService({
    clock: metricsClock,
    region,
    accountId,
    log,
    actions: {
      publishAlarm: (arn, subject, message) => {
        if (!sns.topics.has(arn)) return false;
        sns.publish(arn, message, subject);
        return true;
      },
    },
  });
  const k8sCfg = opts.kubernetes ?? file.kubernetes;
  const kubernetes =
    k8sCfg === false ? undefined : await startK8sSim(sim, { ...k8sCfg, host: opts.host ?? '127.0.0.1', log });

  const quotas = new ServiceQuotasService(
    { region, accountId, limits: sim.opts.limits },
    { ...file.quotas, ...opts.quotas },
  );
  const admin: CloudSimAdmin = {
    getQuotas: () => quotas.list(),
    setQuotas: (values) => quotas.set(values),
    state: () => {
      sim.catchUp();
      cloudwatch.catchUp();
      return stateView(sim, clock, seed, timeScale, cloudwatch, sns);
    },
    getFaults: () => structuredClone(sim.faults),
    setFaults: (f) => {
      sim.faults = checkFaults(structuredClone(f));
    },
    patchFaults: (f) => {
      sim.faults = checkFaults({ ...sim.faults, ...structuredClone(f) });
    },
    deleteNodegroup: (name) => {
      sim.catchUp();
      return sim.deleteOutOfBand(name);
    },
    createNodegroup: (spec) => {
      sim.catchUp();
      const ng = createOutOfBand(sim, spec);
      return stateView(sim, clock, seed, timeScale, cloudwatch, sns).nodegroups.find(
        (n) => n.name === ng.name,
      )!;
    },
    reset: () => sim.reset(structuredClone(initialFaults)),
    interruptSpot: (instanceId) => {
      sim.catchUp();
      return sim.interruptSpot(instanceId);
    },
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      try {
        handle(req, res, Buffer.concat(chunks).toString('utf8'));
      } catch (e) {
        sendJson(
          res,
          500,
          { message: `cloud-sim internal error: ${(e as Error).message}` },
          'ServerException',
        );
      }
    });
  });

  function handle(req: IncomingMessage, res: ServerResponse, raw: string): void {
    const url = new URL(req.url ?? '/', 'http://sim');
    const method = req.method ?? 'GET';
    if (url.pathname.startsWith('/_sim')) {
      handleAdmin(method, url.pathname, raw, res);
      return;
    }
    const target = String(req.headers['x-amz-target'] ?? '');
    if (method === 'POST' && target.startsWith(CLOUDWATCH_TARGET)) {
      handleCloudWatch(target.slice(CLOUDWATCH_TARGET.length), raw, res);
      return;
    }
    if (method === 'POST' && target.startsWith(SERVICE_QUOTAS_TARGET)) {
      handleServiceQuotas(target.slice(SERVICE_QUOTAS_TARGET.length), raw, res);
      return;
    }
    // SNS answers the query protocol like Auto Scaling; SubscribeURL and UnsubscribeURL are GETs with a query.
    const form =
      method === 'GET'
        ? url.searchParams
        : isQueryRequest(method, url.pathname, req.headers['content-type'])
          ? new URLSearchParams(raw)
          : undefined;
    if (
      form &&
      (form.get('Version') === SNS_VERSION || (method === 'GET' && SNS_ACTIONS.has(form.get('Action') ?? '')))
    ) {
      handleSns(form, res);
      return;
    }
    sim.catchUp();
    // EC2 DescribeInstanceTypes and DescribeSubnets, and Price List GetProducts (aws-data.ts).
    const awsData = {
      log,
      subnets: (ids: readonly string[]) => sim.subnets(ids),
      region: sim.opts.region,
      accountId: sim.opts.accountId,
      fault: (op: string) => sim.drawFault(op),
      serverErrorType: () => sim.faults.serverErrorType,
    };
    if (serveAwsData(req, raw, res, awsData)) return;
    if (isQueryRequest(method, url.pathname, req.headers['content-type'])) {
      const requestId = randomUUID();
      const { operation, handle: run } = handleQuery(sim, new URLSearchParams(raw));
      try {
        const fault = sim.drawFault(operation);
        if (fault === 'throttle') throw new AsgError(400, 'Throttling', 'Rate exceeded');
        if (fault === 'server')
          throw sim.faults.serverErrorType === 'ServiceUnavailableException'
            ? new AsgError(503, 'ServiceUnavailable', 'Service is unavailable. Please try again later.')
            : new AsgError(500, 'InternalFailure', 'An internal error has occurred.');
        const xml = run();
        log(`AutoScaling ${operation} 200`);
        res.writeHead(200, { 'content-type': 'text/xml', 'x-amzn-requestid': requestId });
        res.end(xml);
      } catch (e) {
        if (!(e instanceof AsgError)) throw e;
        log(`AutoScaling ${operation} ${e.status} ${e.code}`);
        res.writeHead(e.status, { 'content-type': 'text/xml', 'x-amzn-requestid': requestId });
        res.end(asgErrorXml(e, requestId));
      }
      return;
    }
    let body: Record<string, unknown> = {};
    let route: ReturnType<typeof routeEks>;
    try {
      if (raw.trim() !== '') {
        const parsed = JSON.parse(raw);
        if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
          throw new EksError('SerializationException', 'The request body must be a JSON object');
        body = parsed;
      }
      route = routeEks(sim, { method, path: url.pathname, query: url.searchParams, body });
      if (!route)
        throw new EksError('UnknownOperationException', `No EKS operation for ${method} ${url.pathname}`);
      const fault = sim.drawFault(route.operation);
      if (fault === 'throttle')
        throw new EksError('ThrottlingException', 'Rate exceeded', { clusterName: sim.opts.clusterName });
      if (fault === 'server')
        throw sim.faults.serverErrorType === 'ServiceUnavailableException'
          ? new EksError('ServiceUnavailableException', 'Service Unavailable. Please try again later.')
          : new EksError('ServerException', 'An internal error occurred. Please try again later.');
      const out = route.handle();
      log(`EKS ${route.operation} 200${describeTarget(url.pathname)}`);
      sendJson(res, 200, out);
    } catch (caught) {
      const e =
        caught instanceof SyntaxError
          ? new EksError('SerializationException', 'The request body is not valid JSON')
          : caught;
      if (!(e instanceof EksError)) throw e;
      log(`EKS ${route?.operation ?? `${method} ${url.pathname}`} ${e.status} ${e.type}: ${e.message}`);
      sendJson(res, e.status, e.body(), e.type);
    }
  }

  function handleCloudWatch(operation: string, raw: string, res: ServerResponse): void {
    const requestId = randomUUID();
    const send = (status: number, body: unknown, extra: Record<string, string> = {}) => {
      res.writeHead(status, {
        'content-type': 'application/x-amz-json-1.0',
        'x-amzn-requestid': requestId,
        ...extra,
      });
      res.end(JSON.stringify(body));
    };
    try {
      let body: Record<string, unknown> = {};
      try {
        body = raw.trim() ? JSON.parse(raw) : {};
      } catch {
        throw new CloudWatchError(
          'InvalidFormat',
          'InvalidFormatFault',
          'The request body is not valid JSON.',
        );
      }
      const out = cloudwatch.handle(operation, body);
      log(`CloudWatch ${operation} 200`);
      send(200, out);
    } catch (e) {
      if (!(e instanceof CloudWatchError)) throw e;
      log(`CloudWatch ${operation} ${e.status} ${e.code}: ${e.message}`);
      send(
        e.status,
        { __type: `com.amazonaws.cloudwatch#${e.shape}`, message: e.message },
        { 'x-amzn-query-error': `${e.code};${e.status >= 500 ? 'Receiver' : 'Sender'}` },
      );
    }
  }

  function handleServiceQuotas(operation: string, raw: string, res: ServerResponse): void {
    const send = (status: number, body: unknown) => {
      res.writeHead(status, {
        'content-type': 'application/x-amz-json-1.1',
        'x-amzn-requestid': randomUUID(),
      });
      res.end(JSON.stringify(body));
    };
    try {
      let body: Record<string, unknown>;
      try {
        body = raw.trim() ? JSON.parse(raw) : {};
      } catch {
        throw new ServiceQuotasError('IllegalArgumentException', 'The request body is not valid JSON.');
      }
      const out = quotas.handle(operation, body);
      log(`ServiceQuotas ${operation} 200 ${String(body.QuotaCode)}`);
      send(200, out);
    } catch (e) {
      if (!(e instanceof ServiceQuotasError)) throw e;
      log(`ServiceQuotas ${operation} 400 ${e.type}: ${e.message}`);
      send(400, { __type: e.type, Message: e.message });
    }
  }

  function handleSns(form: URLSearchParams, res: ServerResponse): void {
    const action = form.get('Action') ?? '';
    try {
      const xml = sns.handle(form);
      log(`SNS ${action} 200`);
      res.writeHead(200, { 'content-type': 'text/xml', 'x-amzn-requestid': randomUUID() });
      res.end(xml);
    } catch (e) {
      if (!(e instanceof SnsError)) throw e;
      log(`SNS ${action} ${e.status} ${e.code}: ${e.message}`);
      res.writeHead(e.status, { 'content-type': 'text/xml', 'x-amzn-requestid': randomUUID() });
      res.end(sns.errorXml(e));
    }
  }

  function handleAdmin(method: string, path: string, raw: string, res: ServerResponse): void {
    if (method === 'GET' && path === '/_sim/kubeconfig' && kubernetes) {
      res.writeHead(200, { 'content-type': 'application/yaml' });
      res.end(kubernetes.kubeconfig());
      return;
    }
    let answer: [number, unknown];
    try {
      answer = adminRoute(method, path, raw.trim() ? JSON.parse(raw) : {});
    } catch (e) {
      answer = [400, { message: (e as Error).message }];
    }
    sendJson(res, answer[0], answer[1]);
  }

  function adminRoute(method: string, path: string, body: Record<string, unknown>): [number, unknown] {
    const p = path.split('/').filter(Boolean).slice(1);
    const route = `${method} /${p[0] ?? ''}`;
    if (route === 'GET /health') return [200, { ok: true, cluster: sim.opts.clusterName }];
    if (route === 'GET /state') return [200, admin.state()];
    if (route === 'GET /faults') return [200, admin.getFaults()];
    if (route === 'GET /quotas') return [200, admin.getQuotas()];
    if (route === 'PATCH /quotas') {
      admin.setQuotas(body as Record<string, number | null>);
      return [200, admin.getQuotas()];
    }
    if (route === 'PUT /faults') {
      admin.setFaults(body as FaultConfig);
      return [200, admin.getFaults()];
    }
    if (route === 'PATCH /faults') {
      admin.patchFaults(body as FaultConfig);
      return [200, admin.getFaults()];
    }
    if (route === 'POST /nodegroups')
      return [201, admin.createNodegroup(body as unknown as OutOfBandNodegroup)];
    if (route === 'DELETE /nodegroups' && p[1]) {
      const name = decodeURIComponent(p[1]);
      if (!admin.deleteNodegroup(name)) return [404, { message: `No node group found for name: ${name}.` }];
      return [200, { deleted: name }];
    }
    // The model servers' load (docs/k8s-sim.md): a list of schedules, each replacing its model's.
    if (route === 'GET /traffic' && kubernetes) return [200, kubernetes.cluster.traffic.list()];
    if (route === 'PUT /traffic' && kubernetes) {
      kubernetes.cluster.traffic.set(body as unknown as TrafficConfig[], kubernetes.cluster.now());
      return [200, kubernetes.cluster.traffic.list()];
    }
    if (route === 'POST /clock' && p[1] === 'advance') {
      if (!isDrivenClock(clock))
        return [409, { message: 'the simulator runs on the real clock; start it with a driven clock' }];
      const ms = Number(body.ms);
      if (!Number.isFinite(ms) || ms < 0) return [400, { message: 'body must be {"ms": <number >= 0>}' }];
      clock.advance(ms);
      cloudwatch.catchUp();
      return [200, { now: new Date(clock.now()).toISOString() }];
    }
    if (route === 'POST /logs') {
      // CloudWatch Logs PutLogEvents in short, for a process that prints EMF elsewhere: {"events":[{timestamp,message}]}.
      const events = body.events;
      if (!Array.isArray(events) || events.some((e) => typeof e?.message !== 'string'))
        return [400, { message: 'body must be {"events": [{"timestamp": <ms>, "message": "<log line>"}]}' }];
      return [200, cloudwatch.putLogEvents(events as { timestamp: number; message: string }[])];
    }
    if (route === 'POST /spot-interruptions') {
      if (typeof body.instanceId !== 'string')
        return [400, { message: 'body must be {"instanceId": "i-..."}' }];
      return [200, admin.interruptSpot(body.instanceId)];
    }
    if (route === 'POST /reset') {
      admin.reset();
      return [200, { reset: true }];
    }
    return [404, { message: `unknown admin route ${method} ${path}` }];
  }

  server.keepAliveTimeout = 65_000;
  const host = opts.host ?? '127.0.0.1';
  const wantPort = opts.port ?? file.port ?? 4510;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(wantPort, host, () => {
      server.off('error', reject);
      resolve();
    });
  }).catch(async (e) => {
    await kubernetes?.stop();
    throw e;
  });
  const port = (server.address() as AddressInfo).port;
  endpoint = `http://${host}:${port}`;
  // On the wall clock alarms are evaluated as time passes; a driven clock evaluates when a request or advance comes.
  const ticker = isDrivenClock(metricsClock) ? undefined : setInterval(() => cloudwatch.catchUp(), 1000);
  ticker?.unref();
  return {
    kubernetes,
    endpoint,
    port,
    clusterName: sim.opts.clusterName,
    region,
    clock,
    metricsClock,
    seed,
    admin,
    cloudwatch,
    sns,
    onEvent: (target) => sim.onEvent(target),
    stop: async () => {
      if (ticker) clearInterval(ticker);
      await kubernetes?.stop();
      await sns.drain();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

function describeTarget(path: string): string {
  const m = /\/node-groups\/([^/]+)/.exec(path);
  return m ? ` ${decodeURIComponent(m[1] as string)}` : '';
}

function sendJson(res: ServerResponse, status: number, body: unknown, errorType?: string): void {
  const requestId = randomUUID();
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'x-amzn-requestid': requestId,
    'x-amz-apigw-id': requestId.slice(0, 16),
    'x-amzn-trace-id': `Root=1-${Math.floor(Date.now() / 1000).toString(16)}-${requestId.replace(/-/g, '').slice(0, 24)}`,
  };
  if (errorType) headers['x-amzn-errortype'] = errorType;
  res.writeHead(status, headers);
  res.end(JSON.stringify(body));
}

function stateView(
  sim: Simulator,
  clock: Clock,
  seed: number,
  timeScale: number,
  cloudwatch: CloudWatchService,
  sns: SnsService,
): SimStateView {
  return {
    alarms: cloudwatch.listAlarms().map((a) => ({
      name: a.AlarmName,
      state: a.StateValue,
      reason: a.StateReason,
      updatedAt: new Date(a.StateUpdatedTimestamp).toISOString(),
    })),
    topics: [...sns.topics.values()].map((t) => ({
      arn: t.arn,
      subscriptions: [...t.subscriptions.values()].map((x) => ({
        protocol: x.protocol,
        endpoint: x.endpoint,
        status: x.pending ? 'PendingConfirmation' : 'Confirmed',
      })),
    })),
    now: new Date(sim.now()).toISOString(),
    clock: clock instanceof DrivenClock ? 'driven' : 'real',
    seed,
    timeScale,
    cluster: sim.opts.clusterName,
    region: sim.opts.region,
    faults: structuredClone(sim.faults),
    nodegroups: sim.list().map((ng) => {
      const r = renderNodegroup(sim, ng);
      return {
        name: ng.name,
        status: r.status,
        scalingConfig: r.scalingConfig,
        health: r.health,
        tags: r.tags,
        autoScalingGroup: {
          name: ng.asg.name,
          desiredCapacity: ng.asg.desired,
          instances: ng.asg.instances.map((i) => ({
            id: i.id,
            type: i.type,
            az: i.az,
            lifecycleState: i.state,
          })),
        },
        updates: [...ng.updates.values()].map(renderUpdate),
      };
    }),
    pendingEvents: sim.pendingEvents().map((e) => ({ at: new Date(e.at).toISOString(), label: e.label })),
  };
}
