import { join } from 'node:path';
import { resetApp } from '../lambdas/api/app';
import { handler } from '../lambdas/api/handler';
import { dynamoClient, resetClients } from '../lambdas/shared/clients';
import { resetConfig } from '../lambdas/shared/config';
import { ensureTable } from '../lambdas/store/table';
import { startApiServer } from './api-server';
import { type CloudSim, startCloudSim } from './cloud-sim';
import { type DynamoDbLocal, startDynamoDbLocal } from './dynamodb-local';

/**
 * The local control plane: the same Lambda code, with DynamoDB Local as the store, served on 127.0.0.1.
 * Used by `npm start` and by the end-to-end tests, so both exercise exactly one wiring.
 */

export interface ControlPlaneOptions {
  port?: number;
  persist?: boolean;
  dataDir?: string;
  /** An already running DynamoDB (the tests share one); otherwise one is started. */
  dynamodbEndpoint?: string;
  table?: string;
  admins?: string[];
  /** Cloud simulator port (0 = free); default LLMCAP_SIM_PORT or 4510. */
  simPort?: number;
  /** Multiplies the simulator's EKS durations; default LLMCAP_SIM_TIME_SCALE or 0.1 (a create takes 12 s). */
  simTimeScale?: number;
  log?: (line: string) => void;
}

export interface ControlPlane {
  apiUrl: string;
  dynamodbEndpoint: string;
  table: string;
  sim: CloudSim;
  stop(): Promise<void>;
}

export async function startControlPlane(opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const log = opts.log ?? (() => undefined);
  let ddb: DynamoDbLocal | undefined;
  let endpoint = opts.dynamodbEndpoint;
  if (!endpoint) {
    const persistDir = opts.persist
      ? (opts.dataDir ?? join(process.cwd(), '.llmcap', 'dynamodb'))
      : undefined;
    ddb = await startDynamoDbLocal({ persistDir });
    endpoint = ddb.endpoint;
    log(
      `DynamoDB Local   ${endpoint} (${persistDir ? `data in ${persistDir}` : 'in memory'}, pid ${ddb.pid})`,
    );
  }
  const table = opts.table ?? 'llmcap-local';
  const timeScale = opts.simTimeScale ?? Number(process.env.LLMCAP_SIM_TIME_SCALE ?? 0.1);
  const sim = await startCloudSim({
    port: opts.simPort ?? Number(process.env.LLMCAP_SIM_PORT ?? 4510),
    timeScale,
    clusterName: 'llmcap-local',
  });
  log(`cloud simulator  ${sim.endpoint} (EKS cluster llmcap-local, Auto Scaling; time scale ${timeScale})`);
  Object.assign(process.env, {
    LLMCAP_EKS_ENDPOINT: sim.endpoint,
    LLMCAP_CLUSTER: 'llmcap-local',
    LLMCAP_DYNAMODB_ENDPOINT: endpoint,
    LLMCAP_TABLE: table,
    LLMCAP_STAGE: process.env.LLMCAP_STAGE ?? 'local',
    LLMCAP_ADMINS: (opts.admins ?? ['local-admin']).join(','),
    AWS_REGION: process.env.AWS_REGION ?? 'us-east-1',
    AWS_ACCESS_KEY_ID: process.env.AWS_ACCESS_KEY_ID ?? 'local',
    AWS_SECRET_ACCESS_KEY: process.env.AWS_SECRET_ACCESS_KEY ?? 'local',
  });
  resetConfig();
  resetClients();
  resetApp();
  const client = dynamoClient(endpoint);
  await ensureTable(client, table);
  client.destroy();
  const api = await startApiServer({ handler, port: opts.port ?? 3000 });
  log(`API              ${api.url}/v1 (caller: x-llmcap-principal header, default local-admin)`);
  return {
    apiUrl: api.url,
    dynamodbEndpoint: endpoint,
    table,
    sim,
    stop: async () => {
      await api.close();
      await sim.stop();
      await ddb?.stop();
    },
  };
}
