import './env';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DrivenClock } from '../local/cloud-sim';
import { type ControlPlane, startControlPlane } from '../local/control-plane';
import { P } from './lib/fixture';

/** What every soak suite shares: a fresh local control plane, quiet by default, and soak/results.json. */

export const RESULTS = join(__dirname, 'results.json');

export async function controlPlane(simTimeScale = 0.001): Promise<ControlPlane> {
  return startControlPlane({
    port: 0,
    simPort: 0,
    simTimeScale,
    reconcileSeconds: 0,
    cooldownSeconds: 0,
    admins: [P.platform],
    // CloudWatch on a driven clock: each pass is the next minute's scheduled pass, so alarm periods pass too.
    clock: new DrivenClock(Math.floor(Date.now() / 60_000) * 60_000),
    log: process.env.SOAK_VERBOSE ? (l) => console.log(`  ${l}`) : undefined,
  });
}

/** Merges one suite's figures into soak/results.json. */
export function record(suite: string, figures: unknown): void {
  const all = existsSync(RESULTS)
    ? (JSON.parse(readFileSync(RESULTS, 'utf8')) as Record<string, unknown>)
    : {};
  all[suite] = { ...(figures as object), recordedAt: new Date().toISOString() };
  writeFileSync(RESULTS, `${JSON.stringify(all, null, 2)}\n`);
}

export const num = (name: string, fallback: number) => Number(process.env[name] ?? fallback);

export function log(line: string): void {
  console.log(`[soak] ${line}`);
}
