import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

/**
 * Every DynamoDB write goes through store/write.ts's sendWrite, which keeps this process's readings
 * (store/shared-read.ts) true: a write sent past it would leave a write's next decision deciding, for up to
 * LLMCAP_WRITE_SNAPSHOT_MS, on a reading without this process's own change.
 */

const ROOT = resolve(__dirname, '../../../lambdas');

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

const WRITE = /\.send\(\s*new (Put|Update|Delete|TransactWrite|BatchWrite)(Item|Items)?Command\b/g;

it('sends no DynamoDB write but through sendWrite', () => {
  const past = files(ROOT)
    .filter((f) => relative(ROOT, f) !== 'store/write.ts')
    .flatMap((f) => [...readFileSync(f, 'utf8').matchAll(WRITE)].map((m) => `${relative(ROOT, f)}: ${m[0]}`));
  expect(past).toEqual([]);
});

it('would see one (the pattern matches the shapes the store writes in)', () => {
  expect('await documentClient().send(\n  new UpdateCommand({'.match(WRITE)).toHaveLength(1);
  expect('client.send(new TransactWriteItemsCommand(x))'.match(WRITE)).toHaveLength(1);
  expect('documentClient().send(new QueryCommand({'.match(WRITE)).toBeNull();
});
