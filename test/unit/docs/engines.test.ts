import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * `engines.node` promises a Node version on which every dependency runs: its lowest version must satisfy each
 * direct dependency's own `engines.node`. aws-local-stepfunctions requires 22; the polyfill that lets this
 * repository run on 20 too is told in README's Prerequisites, not hidden by a lower `engines`.
 */

// semver ships no types and is a dependency of npm itself and of many of ours; the two calls used are typed here.
const semver = require('semver') as {
  minVersion(range: string): { version: string } | null;
  satisfies(version: string, range: string): boolean;
};

const ROOT = join(__dirname, '..', '..', '..');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));

it('the lowest Node of engines runs every direct dependency', () => {
  const lowest = semver.minVersion(pkg.engines.node)!.version;
  const refuse: string[] = [];
  for (const name of Object.keys({ ...pkg.dependencies, ...pkg.devDependencies })) {
    const dep = JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8'));
    const need: string | undefined = dep.engines?.node;
    if (need && !semver.satisfies(lowest, need)) refuse.push(`${name} needs ${need}`);
  }
  expect({ lowest, refuse }).toEqual({ lowest, refuse: [] });
});

it('README states the same Node version and the Node 20 fallback', () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const major = semver.minVersion(pkg.engines.node)!.version.split('.')[0];
  expect(readme).toContain(`Node.js ${major} or newer (\`engines\`)`);
  expect(readme).toContain('local/sfn/polyfill.ts');
});
