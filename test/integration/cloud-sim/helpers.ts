import { AutoScalingClient, DescribeAutoScalingGroupsCommand } from '@aws-sdk/client-auto-scaling';
import {
  CreateNodegroupCommand,
  type CreateNodegroupCommandInput,
  DescribeNodegroupCommand,
  EKSClient,
} from '@aws-sdk/client-eks';
import { type CloudSim, type CloudSimOptions, DrivenClock, startCloudSim } from '../../../local/cloud-sim';

export const CLUSTER = 'llmcap-local';
export const ROLE = 'arn:aws:iam::123456789012:role/llmcap-node';
export const SUBNETS = ['subnet-0a1b2c3d4e5f60001', 'subnet-0a1b2c3d4e5f60002'];
export const SEC = 1000;
export const MIN = 60 * SEC;

export interface Harness {
  sim: CloudSim;
  clock: DrivenClock;
  eks: EKSClient;
  asg: AutoScalingClient;
  close(): Promise<void>;
}

/** A simulator on a driven clock with realistic durations, and real SDK clients pointed at it. */
export async function harness(opts: CloudSimOptions & { maxAttempts?: number } = {}): Promise<Harness> {
  const clock = new DrivenClock();
  const { maxAttempts = 1, ...simOpts } = opts;
  const sim = await startCloudSim({ port: 0, clock, seed: 7, ...simOpts });
  const cfg = { endpoint: sim.endpoint, region: 'us-east-1', maxAttempts };
  const eks = new EKSClient(cfg);
  const asg = new AutoScalingClient(cfg);
  return {
    sim,
    clock,
    eks,
    asg,
    close: async () => {
      eks.destroy();
      asg.destroy();
      await sim.stop();
    },
  };
}

export function createInput(
  name: string,
  extra: Partial<CreateNodegroupCommandInput> = {},
): CreateNodegroupCommandInput {
  return {
    clusterName: CLUSTER,
    nodegroupName: name,
    nodeRole: ROLE,
    subnets: SUBNETS,
    scalingConfig: { minSize: 0, maxSize: 4, desiredSize: 2 },
    instanceTypes: ['g6.2xlarge'],
    amiType: 'AL2023_x86_64_NVIDIA',
    ...extra,
  };
}

export async function create(h: Harness, name: string, extra: Partial<CreateNodegroupCommandInput> = {}) {
  return (await h.eks.send(new CreateNodegroupCommand(createInput(name, extra)))).nodegroup!;
}

export async function describeNg(h: Harness, name: string) {
  return (await h.eks.send(new DescribeNodegroupCommand({ clusterName: CLUSTER, nodegroupName: name })))
    .nodegroup!;
}

export async function status(h: Harness, name: string): Promise<string | undefined> {
  return (await describeNg(h, name)).status;
}

/** The node group's ASG as Auto Scaling reports it, found through resources.autoScalingGroups like a client would. */
export async function asgOf(h: Harness, name: string) {
  const ng = await describeNg(h, name);
  const asgName = ng.resources?.autoScalingGroups?.[0]?.name;
  if (!asgName) throw new Error(`${name} has no ASG`);
  const out = await h.asg.send(new DescribeAutoScalingGroupsCommand({ AutoScalingGroupNames: [asgName] }));
  return out.AutoScalingGroups?.[0];
}

export async function lifecycleStates(h: Harness, name: string): Promise<string[]> {
  const g = await asgOf(h, name);
  return (g?.Instances ?? []).map((i) => i.LifecycleState ?? '?').sort();
}

/** The error a command fails with; fails the test if it succeeds. */
export async function failure(p: Promise<unknown>): Promise<
  Error & {
    $metadata: { httpStatusCode?: number };
    $fault?: string;
    clusterName?: string;
    nodegroupName?: string;
  }
> {
  try {
    await p;
  } catch (e) {
    return e as never;
  }
  throw new Error('expected the call to fail');
}
