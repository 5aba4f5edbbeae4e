import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { InstanceTypeInfo } from '@aws-sdk/client-ec2';
import { toInstanceFacts, toOnDemandPrice } from '../../lambdas/aws/hardware';
import type { InstanceFacts, OnDemandPrice } from '../../lambdas/domain/hardware';

/**
 * The checked-in snapshot of AWS's data (config/aws/: DescribeInstanceTypes answers and Price List entries)
 * that the simulator serves, read once per process. Lambda code never imports this: in AWS the same facts
 * come from the APIs. Also the lookup for other local simulators (a node's capacity by instance type):
 * `instanceFacts('g6.2xlarge')`.
 */

export const SNAPSHOT_DIR = join(__dirname, '..', '..', 'config', 'aws');

export interface Snapshot {
  instanceTypes: InstanceTypeInfo[];
  byName: Map<string, InstanceTypeInfo>;
  /** Price list entries of every region file, in file order (sorted by instance type, then sku). */
  priceList: Record<string, any>[];
}

const loaded = new Map<string, Snapshot>();

export function loadSnapshot(dir = SNAPSHOT_DIR): Snapshot {
  let s = loaded.get(dir);
  if (!s) {
    const types = JSON.parse(readFileSync(join(dir, 'instance-types.json'), 'utf8')) as {
      instanceTypes: InstanceTypeInfo[];
    };
    const priceList = readdirSync(dir)
      .filter((f) => /^prices-[a-z0-9-]+\.json$/.test(f))
      .sort()
      .flatMap(
        (f) =>
          (JSON.parse(readFileSync(join(dir, f), 'utf8')) as { priceList: Record<string, any>[] }).priceList,
      );
    s = {
      instanceTypes: types.instanceTypes,
      byName: new Map(types.instanceTypes.map((t) => [t.InstanceType as string, t])),
      priceList,
    };
    loaded.set(dir, s);
  }
  return s;
}

/** DescribeInstanceTypes' answer for one instance type, as the snapshot has it. */
export function instanceTypeInfo(name: string): InstanceTypeInfo | undefined {
  return loadSnapshot().byName.get(name);
}

/** What llmcap's domain knows of an instance type (vCPUs, memory, architecture, accelerators, network). */
export function instanceFacts(name: string): InstanceFacts | undefined {
  const info = instanceTypeInfo(name);
  return info ? toInstanceFacts(info) : undefined;
}

/** The snapshot's on-demand Linux price of an instance type in a region. */
export function snapshotPrice(region: string, name: string): OnDemandPrice | undefined {
  const e = loadSnapshot().priceList.find(
    (p) => p.product?.attributes?.instanceType === name && p.product?.attributes?.regionCode === region,
  );
  return e ? toOnDemandPrice(e, region) : undefined;
}
