import { randomUUID } from 'node:crypto';
import { spawnControlPlane } from '../../../local/control-plane-process';

/**
 * The control plane in a process of its own (the bench's and the soak's): once stopped, nothing of it is left
 * holding the caller's process open, so a bench ends when its work does.
 */

const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

it('stops its child and leaves no timer of its own behind', async () => {
  const before = timers();
  const cp = await spawnControlPlane({
    dynamodbEndpoint: process.env.LLMCAP_DYNAMODB_ENDPOINT!,
    table: `cp-process-${randomUUID().slice(0, 8)}`,
  });
  expect((await fetch(`${cp.apiUrl}/v1/healthz`)).status).toBe(200);
  await cp.stop();
  expect(timers()).toBeLessThanOrEqual(before);
}, 120_000);
