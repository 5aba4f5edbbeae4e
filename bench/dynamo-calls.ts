import { documentClient } from '../lambdas/shared/clients';

/**
 * Counts the DynamoDB calls this process's document client sends, by command (GetItem, Query, UpdateItem COMPUTE...),
 * so a bench reports them beside the AWS calls a pass makes (issue 31 §5). `take` returns the tally since the
 * last take and starts a new one.
 */
export function countDynamoDb(): { take(): Record<string, number>; stop(): void } {
  let tally: Record<string, number> = {};
  const name = 'benchDynamoDbCalls';
  documentClient().middlewareStack.add(
    (next, context) => async (args) => {
      const command = String(context.commandName ?? '?').replace(/Command$/, '');
      // A single-item write is named by its partition's kind too (EVENT#model#m1 as EVENT: one partition per
      // resource), so a table says what a pass rewrites without a column per model.
      const pk = (args.input as { Key?: { pk?: unknown }; Item?: { pk?: unknown } }).Key?.pk;
      const kind = String(pk).split('#')[0];
      const key = /^(UpdateItem|PutItem|DeleteItem)$/.test(command) && pk ? `${command} ${kind}` : command;
      tally[key] = (tally[key] ?? 0) + 1;
      return next(args);
    },
    { step: 'initialize', name, override: true },
  );
  return {
    take() {
      const out = tally;
      tally = {};
      return out;
    },
    stop() {
      documentClient().middlewareStack.remove(name);
    },
  };
}

/** "3 Query, 200 UpdateItem": a tally in words, largest first. */
export function tallyText(t: Record<string, number>): string {
  const total = Object.values(t).reduce((a, b) => a + b, 0);
  const parts = Object.entries(t)
    .sort((a, b) => b[1] - a[1])
    .map(([c, n]) => `${n} ${c}`);
  return parts.length ? `${total} (${parts.join(', ')})` : '0';
}
