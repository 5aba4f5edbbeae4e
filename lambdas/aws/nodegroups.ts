import {
  DescribeAutoScalingGroupsCommand,
  DescribeScalingActivitiesCommand,
  TerminateInstanceInAutoScalingGroupCommand,
} from '@aws-sdk/client-auto-scaling';
import { DescribeNodegroupCommand, type Nodegroup } from '@aws-sdk/client-eks';
import type { Compute, NodegroupStatus, ObservedStatus } from '../domain/compute';
import { needsObservation } from '../domain/compute-changes';
import { foreignMessage, ISSUE_DEFAULTS, nodegroupNameOf, ownerOf, ownsNodegroup } from '../domain/nodegroup';
import { type LaunchActivity, readsLaunches } from '../domain/supply';
import { autoScalingClient, ec2Client, eksClient } from '../shared/clients';
import { config } from '../shared/config';
import { mapLimit } from '../shared/map-limit';

/**
 * Observes what AWS runs for each compute: DescribeNodegroup (bounded concurrency; the SDK retries throttling)
 * and, for ready nodes, the InService instances of the node group's Auto Scaling group. A group whose tags
 * say it is not this compute's is recorded FOREIGN and nothing more is read from it, so no workflow is ever
 * started on someone else's group.
 */

export interface Observation {
  compute: string;
  status: ObservedStatus;
  maxSize?: number;
  /** True when the node group was expected but EKS no longer knows it (deleted out of band). */
  vanished: boolean;
  calls: number;
  /**
   * The launches among its Auto Scaling group's latest activities (newest first), with their zones: read only
   * when one may have failed or ended a shortage (readsLaunches: issue 32 §3), so a steady pass makes no extra call.
   */
  launches?: LaunchActivity[];
  /** The Availability Zones of the group's Auto Scaling group (its subnets'), as Auto Scaling lists them. */
  zones?: string[];
}

const MAX_CONCURRENCY = 8;

function healthMessage(ng: Nodegroup): { message?: string; issues: { code: string; message: string }[] } {
  const issues = (ng.health?.issues ?? []).map((i) => ({
    code: i.code ?? ISSUE_DEFAULTS.code,
    message: i.message ?? ISSUE_DEFAULTS.message,
  }));
  if (!issues.length) return { issues };
  return { issues, message: issues.map((i) => `${i.code}: ${i.message}`).join('; ') };
}

export type ObservedCompute = Pick<Compute, 'name' | 'status' | 'workflow' | 'createdAt' | 'uid' | 'supply'>;

async function observeOne(c: ObservedCompute, now: string): Promise<Observation> {
  const name = nodegroupNameOf(config().stage, c);
  let calls = 1;
  let ng: Nodegroup | undefined;
  try {
    const out = await eksClient().send(
      new DescribeNodegroupCommand({ clusterName: config().cluster, nodegroupName: name }),
    );
    ng = out.nodegroup;
  } catch (e) {
    if ((e as Error).name !== 'ResourceNotFoundException') throw e;
  }
  const was = c.status.nodegroupStatus;
  if (!ng) {
    const vanished = was !== 'ABSENT' && was !== 'DELETING' && was !== 'FOREIGN';
    const message = vanished
      ? `node group ${name} is gone: it was deleted outside llmcap`
      : was === 'FOREIGN'
        ? `node group ${name} that was not llmcap's is gone; llmcap creates this compute's own`
        : undefined;
    return {
      compute: c.name,
      vanished,
      calls,
      status: {
        nodegroupStatus: 'ABSENT',
        desiredNodes: 0,
        readyNodes: 0,
        lastReconciledAt: now,
        ...(message ? { statusMessage: message } : {}),
      },
    };
  }
  const owner = ownerOf(config().stage, c);
  if (!ownsNodegroup(ng.tags, owner)) {
    return {
      compute: c.name,
      vanished: false,
      calls,
      status: {
        nodegroupStatus: 'FOREIGN',
        desiredNodes: 0,
        readyNodes: 0,
        lastReconciledAt: now,
        healthIssues: [],
        statusMessage: foreignMessage(name, ng.tags, owner),
      },
    };
  }
  const asgName = ng.resources?.autoScalingGroups?.[0]?.name;
  let ready = 0;
  let launches: LaunchActivity[] | undefined;
  let zones: string[] | undefined;
  if (asgName) {
    calls++;
    const out = await autoScalingClient().send(
      new DescribeAutoScalingGroupsCommand({ AutoScalingGroupNames: [asgName] }),
    );
    const group = out.AutoScalingGroups?.[0];
    const instances = group?.Instances ?? [];
    ready = instances.filter(
      (i) => i.LifecycleState === 'InService' && i.HealthStatus !== 'Unhealthy',
    ).length;
    const live = instances.filter((i) => !i.LifecycleState?.startsWith('Terminat')).length;
    const desired = group?.DesiredCapacity ?? 0;
    zones = group?.AvailabilityZones?.length ? [...group.AvailabilityZones].sort() : undefined;
    const seen = { live, ready, desired, zones: zones?.length ?? 0 };
    if (readsLaunches(seen, c.status, c.supply?.shortOfCapacity)) {
      calls++;
      launches = await latestLaunches(asgName);
    }
  }
  const health = healthMessage(ng);
  return {
    compute: c.name,
    vanished: false,
    calls,
    maxSize: ng.scalingConfig?.maxSize,
    ...(launches ? { launches } : {}),
    ...(zones ? { zones } : {}),
    status: {
      nodegroupStatus: (ng.status ?? 'ACTIVE') as NodegroupStatus,
      desiredNodes: ng.scalingConfig?.desiredSize ?? 0,
      readyNodes: ready,
      lastReconciledAt: now,
      healthIssues: health.issues,
      ...(health.message ? { statusMessage: health.message } : {}),
    },
  };
}

/**
 * The launches among the group's latest scaling activities (newest first): whether each succeeded, failed (with
 * EC2's StatusMessage: InsufficientInstanceCapacity, ...) or is still going, and in which zone.
 */
async function latestLaunches(asgName: string): Promise<LaunchActivity[]> {
  const out = await autoScalingClient().send(
    new DescribeScalingActivitiesCommand({ AutoScalingGroupName: asgName, MaxRecords: 10 }),
  );
  return (out.Activities ?? [])
    .filter((x) => x.Description?.startsWith('Launching a new EC2 instance'))
    .map((a) => {
      const code = a.StatusCode;
      const status: LaunchActivity['status'] =
        code === 'Successful' || code === 'Failed' || code === 'InProgress' ? code : 'Other';
      const zone = activityZone(a.Details, a.StatusMessage);
      return {
        status,
        at: (a.EndTime ?? a.StartTime ?? new Date()).toISOString(),
        ...(a.StartTime ? { startedAt: a.StartTime.toISOString() } : {}),
        ...(a.StatusMessage ? { message: a.StatusMessage } : {}),
        ...(zone ? { zone } : {}),
      };
    });
}

/**
 * The zone of an activity: its Details, a JSON string such as `{"Subnet ID":"subnet-…","Availability Zone":"us-east-1a"}`;
 * else the zone EC2's capacity message names ("in the Availability Zone you requested (us-east-1a)").
 */
function activityZone(details: string | undefined, message: string | undefined): string | undefined {
  try {
    const zone = (JSON.parse(details ?? '{}') as Record<string, unknown>)['Availability Zone'];
    if (typeof zone === 'string' && zone) return zone;
  } catch {
    // Details is free text in Auto Scaling's model; a page that is not JSON names no zone.
  }
  return /Availability Zone you requested \(([a-z0-9-]+)\)/.exec(message ?? '')?.[1];
}

/**
 * The zone of each subnet (EC2 DescribeSubnets, one call for all): where a compute's node group will launch,
 * known before it has one, so a zone EC2 is short in for its instance type keeps replicas off it from the start.
 */
export async function subnetZones(ids: readonly string[]): Promise<Record<string, string>> {
  if (!ids.length) return {};
  // Required on first use, as hardware.ts requires it: the EC2 SDK is slow to load for passes that never ask.
  const { DescribeSubnetsCommand } = require('@aws-sdk/client-ec2') as typeof import('@aws-sdk/client-ec2');
  const out = await ec2Client(config().region).send(new DescribeSubnetsCommand({ SubnetIds: [...ids] }));
  return Object.fromEntries(
    (out.Subnets ?? []).flatMap((s) =>
      s.SubnetId && s.AvailabilityZone ? [[s.SubnetId, s.AvailabilityZone]] : [],
    ),
  );
}

export async function observeAll(computes: ObservedCompute[], now: string): Promise<Observation[]> {
  const targets = computes.filter(needsObservation);
  return mapLimit(targets, MAX_CONCURRENCY, (c) => observeOne(c, now));
}

/**
 * Removes one drained node's instance and lowers its group's desired size by exactly one
 * (ShouldDecrementDesiredCapacity), so the group neither replaces it nor picks another instance itself.
 */
export async function terminateInstance(instanceId: string): Promise<void> {
  await autoScalingClient().send(
    new TerminateInstanceInAutoScalingGroupCommand({
      InstanceId: instanceId,
      ShouldDecrementDesiredCapacity: true,
    }),
  );
}
