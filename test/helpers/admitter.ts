import { resetAdmitter } from '../../lambdas/admitter/handler';
import { type AdmitterSummary, summarize } from '../../lambdas/service/admitter';
import { createAdmitterServices } from '../../lambdas/service/for-admitter';
import { startAdmitterSource } from '../../local/admitter-function';
import type { StreamSource } from '../../local/stream-source';

/**
 * The admitter for in-process tests (test/helpers/api.ts): the table's stream drives it through the same event
 * source code as `npm start` (local/admitter-function.ts), one run at a time as reserved concurrency 1 does, and
 * a reconcile pass run in the test process takes its turn in the same line. `settled()` waits until every write
 * made before the call has been decided: what a user sees as Queued turning into a decision.
 */
export interface TestAdmitter {
  run(): Promise<AdmitterSummary>;
  settled(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

let current: { table: string; admitter: TestAdmitter } | undefined;

export async function startTestAdmitter(table: string): Promise<TestAdmitter> {
  if (current?.table === table) return current.admitter;
  await current?.admitter.stop();
  let line: Promise<unknown> = Promise.resolve();
  // One at a time, in the order asked: a Lambda with reserved concurrency 1.
  const serially = <T>(fn: () => Promise<T>): Promise<T> => {
    const next = line.then(fn, fn);
    line = next.catch(() => undefined);
    return next;
  };
  resetAdmitter();
  const runOnce = () => serially(async () => summarize(await createAdmitterServices().admitter.run()));
  const source: StreamSource = await startAdmitterSource({
    endpoint: process.env.LLMCAP_DYNAMODB_ENDPOINT!,
    table,
    pollMs: 10,
    invoke: async () => {
      await runOnce();
    },
  });
  const admitter: TestAdmitter = {
    run: runOnce,
    settled: async (timeoutMs = 20_000) => {
      await source.drained(timeoutMs);
      await line;
    },
    stop: async () => {
      await source.stop();
      await line;
      if (current?.admitter === admitter) current = undefined;
    },
  };
  current = { table, admitter };
  return admitter;
}

/** The admitter of the table under test, if one was started. */
export function testAdmitter(): TestAdmitter | undefined {
  return current?.admitter;
}
