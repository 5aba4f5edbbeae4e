import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { CLI_BUNDLE_ENV } from './cli-bundle';

export default async function globalTeardown(): Promise<void> {
  const g = globalThis as { __ddbLocal?: { stop(): Promise<void> }; __cloudSim?: { stop(): Promise<void> } };
  await g.__cloudSim?.stop();
  await g.__ddbLocal?.stop();
  const bundle = process.env[CLI_BUNDLE_ENV];
  if (bundle) rmSync(dirname(bundle), { recursive: true, force: true });
}
