import { resetHardwareFacts } from '../../lambdas/aws/hardware';
import { resetClients } from '../../lambdas/shared/clients';
import { type CloudSim, startCloudSim } from '../../local/cloud-sim';

/**
 * A cloud simulator of the test file's own, which the API's SDK clients reach instead of the run's shared one
 * (global-setup.ts): for faults, or a cluster, that no other file should see. `env` says which endpoints point
 * at it. Registered before the file's own beforeAll, it starts first; the environment is restored at the end.
 */
export function ownCloudSim(seed: number, env: (endpoint: string) => Record<string, string>): () => CloudSim {
  let sim: CloudSim | undefined;
  const saved = { ...process.env };
  beforeAll(async () => {
    sim = await startCloudSim({ port: 0, seed, kubernetes: false });
    Object.assign(process.env, env(sim.endpoint));
    resetClients();
    resetHardwareFacts();
  });
  afterAll(async () => {
    process.env = saved;
    resetClients();
    resetHardwareFacts();
    await sim?.stop();
  });
  return () => sim!;
}
