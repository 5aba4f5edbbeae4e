import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

/**
 * Every relative link in README.md and docs/*.md resolves: the file or folder exists, and an anchor names a
 * heading of its target as GitHub renders it. A renamed heading or moved file fails here, not for a reader.
 */

const ROOT = join(__dirname, '..', '..', '..');
const DOCS = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

const unfenced = (md: string) => md.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
/** The text outside fenced blocks and inline code, where a link is a link. */
const prose = (md: string) => unfenced(md).replace(/`[^`\n]*`/g, '');

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchors(md: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of unfenced(md).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = m[1]!
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n ? `${base}-${n}` : base);
  }
  for (const m of md.matchAll(/<a\s+(?:name|id)="([^"]+)"/g)) out.add(m[1]!);
  return out;
}

function links(md: string): string[] {
  const text = prose(md);
  const inline = [...text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!);
  const refs = [...text.matchAll(/^\s*\[[^\]]+\]:\s*(\S+)/gm)].map((m) => m[1]!);
  return [...inline, ...refs];
}

it('finds the documents and their links', () => {
  expect(DOCS).toEqual(expect.arrayContaining(['README.md', 'docs/local.md', 'docs/operations.md']));
  expect(links(readFileSync(join(ROOT, 'README.md'), 'utf8')).length).toBeGreaterThan(5);
});

it.each(DOCS)('every relative link and anchor in %s resolves', (doc) => {
  const file = join(ROOT, doc);
  const md = readFileSync(file, 'utf8');
  const broken: string[] = [];
  for (const link of links(md)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue; // https:, mailto: ...
    const [path, anchor] = link.split('#', 2) as [string, string | undefined];
    const target = path ? join(dirname(file), decodeURI(path)) : file;
    if (!existsSync(target)) {
      broken.push(`${link}: no ${relative(ROOT, target)}`);
      continue;
    }
    if (anchor === undefined) continue;
    if (statSync(target).isDirectory() || !target.endsWith('.md')) {
      broken.push(`${link}: an anchor into a file that has no headings`);
      continue;
    }
    if (!anchors(readFileSync(target, 'utf8')).has(decodeURIComponent(anchor)))
      broken.push(`${link}: no heading #${anchor} in ${relative(ROOT, target)}`);
  }
  expect(broken).toEqual([]);
});

it('computes anchors as GitHub does', () => {
  expect([
    ...anchors("# Foreign node group exists and is not llmcap's\n## Deploy\n## Deploy\n## `npm start` ports"),
  ]).toEqual(['foreign-node-group-exists-and-is-not-llmcaps', 'deploy', 'deploy-1', 'npm-start-ports']);
});
