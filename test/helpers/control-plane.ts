import { randomUUID } from 'node:crypto';
import { type ControlPlaneOptions, startControlPlane } from '../../local/control-plane';

/**
 * A local control plane for a test file: on free ports, with the DynamoDB Local of the integration run, a fresh
 * table, the simulator a thousand times faster than EKS, and no schedule (the test drives reconcile itself).
 */
export function testControlPlane(prefix: string, over: ControlPlaneOptions = {}) {
  return startControlPlane({
    port: 0,
    simPort: 0,
    simTimeScale: 0.001,
    reconcileSeconds: 0,
    cooldownSeconds: 0,
    dynamodbEndpoint: process.env.LLMCAP_DYNAMODB_ENDPOINT,
    table: `${prefix}-${randomUUID().slice(0, 8)}`,
    ...over,
  });
}
