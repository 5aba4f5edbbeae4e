import { expectOk, l4Compute, l4Model, setupTenancy } from './fixture';
import type { JsonClient } from './invoke';

/** The world the fuzzer starts in: the tenancy, two computes and three models its name pools point at. */
export async function setupFuzzWorld(admin: JsonClient): Promise<void> {
  await setupTenancy(admin);
  expectOk('fz-l4', await admin('POST', '/v1/computes', l4Compute('fz-l4', 'project:a', 4)), 201);
  const cpu = l4Compute('fz-cpu', 'team:ml', 2) as any;
  cpu.spec.node = { instanceType: 'm7i.xlarge', cpu: 4, memoryGb: 16 };
  cpu.spec.cost = { perHour: 0.2016 };
  expectOk('fz-cpu', await admin('POST', '/v1/computes', cpu), 201);
  expectOk('fz-fb', await admin('POST', '/v1/models', l4Model('fz-fb', 'project:a', 0)), 201);
  const chat = l4Model('fz-chat', 'project:a', 1, 'fz-l4') as any;
  chat.spec.fallback = 'fz-fb';
  expectOk('fz-chat', await admin('POST', '/v1/models', chat), 201);
  expectOk('fz-batch', await admin('POST', '/v1/models', l4Model('fz-batch', 'team:ml', 1)), 201);
}
