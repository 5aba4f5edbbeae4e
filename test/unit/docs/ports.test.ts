import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LOCAL_PORTS } from '../../../local/ports';

/** Each port `npm start` opens is documented by its variable where users look: README and docs/local.md. */

const ROOT = join(__dirname, '..', '..', '..');

it.each(['README.md', 'docs/local.md'])('%s names the variable of every port npm start opens', (doc) => {
  const text = readFileSync(join(ROOT, doc), 'utf8');
  const missing = Object.values(LOCAL_PORTS)
    .map((p) => p.env)
    .filter((env) => !text.includes(`\`${env}\``));
  expect(missing).toEqual([]);
});
