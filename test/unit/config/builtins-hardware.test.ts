import { DeclaredComputeSpecSchema, resolveComputeSpec } from '../../../lambdas/domain/hardware';
import { builtinComputes, readConfigFile } from '../../../lambdas/shared/builtin-config';
import { instanceFacts, snapshotPrice } from '../../../local/cloud-sim/aws-snapshot';

/**
 * config/computes.yaml says what each built-in's hardware and price are; EC2 and the Price List (the snapshot
 * in config/aws) say what they are. They must agree: a wrong built-in would mislead every quota and cost.
 */

const REGION = 'us-east-1'; // the prices in computes.yaml are us-east-1 on-demand

describe('config/computes.yaml against the AWS snapshot', () => {
  const raw = readConfigFile('computes.yaml') as { name: string; spec: unknown }[];
  const parsed = new Map(builtinComputes().map((b) => [b.name, b.spec]));

  it.each(raw.map((b) => [b.name, b.spec] as const))(
    '%s agrees with EC2 and its on-demand price',
    (name, spec) => {
      const declared = DeclaredComputeSpecSchema.parse(spec);
      const r = resolveComputeSpec({
        spec: declared,
        facts: instanceFacts(declared.node.instanceType),
        price: snapshotPrice(REGION, declared.node.instanceType),
        region: REGION,
        by: 'config/computes.yaml',
      });
      expect(r.issues).toEqual([]);
      expect(r.priceOverride).toBe(false);
      // Resolving changes nothing the file says about the hardware; the price is the region's on-demand one.
      expect(r.spec!.node).toMatchObject(parsed.get(name)!.node);
      expect(r.costSource).toMatchObject({ kind: 'on-demand', region: REGION });
    },
  );
});
