import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { UsageError } from './command';
import { yaml } from './render';

/**
 * Manifests from files, directories or stdin (multi-document YAML, or JSON: one object, an array, or a list
 * with `items`), checked enough to route them, and put in dependency order for apply (reversed for delete).
 */

export type ManifestKind = 'Scope' | 'Quota' | 'Compute' | 'Model';
const KIND_ORDER: ManifestKind[] = ['Scope', 'Quota', 'Compute', 'Model'];

export interface Manifest {
  kind: ManifestKind;
  name: string;
  body: Record<string, any>;
  /** Where it came from, for messages: `file.yaml#2`. */
  origin: string;
}

export async function readManifests(sources: string[], stdin: () => Promise<string>): Promise<Manifest[]> {
  const out: Manifest[] = [];
  for (const src of sources) {
    if (src === '-') {
      out.push(...parseManifests(await stdin(), '<stdin>'));
      continue;
    }
    let files: string[];
    try {
      files = statSync(src).isDirectory()
        ? readdirSync(src)
            .filter((f) => /\.(ya?ml|json)$/.test(f))
            .sort()
            .map((f) => join(src, f))
        : [src];
    } catch (e) {
      throw new UsageError(
        `cannot read ${src}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
      );
    }
    for (const f of files) out.push(...parseManifests(readFileSync(f, 'utf8'), f));
  }
  return out;
}

export function parseManifests(text: string, origin: string): Manifest[] {
  const docs = yaml().parseAllDocuments(text);
  const out: Manifest[] = [];
  const problems: string[] = [];
  (Array.isArray(docs) ? docs : [docs]).forEach((doc, i) => {
    const where = `${origin}#${i + 1}`;
    if (doc.errors.length) {
      const e = doc.errors[0]!;
      problems.push(`${where}: not valid YAML or JSON: ${e.message.split('\n')[0]}`);
      return;
    }
    const value = doc.toJS();
    if (value === null || value === undefined) return;
    const entries: unknown[] = Array.isArray(value)
      ? value
      : Array.isArray(value?.items) && (value.kind === undefined || value.kind === 'List')
        ? value.items
        : [value];
    entries.forEach((v, j) => {
      const at = entries.length > 1 || Array.isArray(value) ? `${where}[${j}]` : where;
      const m = check(v, at);
      if (typeof m === 'string') problems.push(m);
      else out.push(m);
    });
  });
  if (problems.length) throw new UsageError(`invalid manifest(s):\n  ${problems.join('\n  ')}`);
  return out;
}

function check(v: unknown, at: string): Manifest | string {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return `${at}: a manifest must be an object`;
  const o = v as Record<string, any>;
  const issues: string[] = [];
  if (o.apiVersion !== 'llmcap/v1') issues.push(`apiVersion must be llmcap/v1, not ${o.apiVersion}`);
  if (!KIND_ORDER.includes(o.kind))
    issues.push(`kind must be one of ${KIND_ORDER.join(', ')}, not ${o.kind}`);
  const name = o.metadata?.name;
  if (typeof name !== 'string' || !name) issues.push('metadata.name is required');
  if (issues.length) return `${at}${typeof name === 'string' ? ` (${name})` : ''}: ${issues.join('; ')}`;
  return { kind: o.kind, name, body: o, origin: at };
}

/**
 * Order for apply: scopes (parents first), quotas (parents first), computes, models (fallbacks first).
 * Stable otherwise; a cycle keeps file order and is left for the API to refuse.
 */
export function applyOrder(ms: Manifest[]): Manifest[] {
  const parents = new Map<string, string>();
  for (const m of ms) if (m.kind === 'Scope' && m.body.spec?.parent) parents.set(m.name, m.body.spec.parent);
  const depth = (scope: string): number => {
    let s = scope;
    let d = 0;
    const seen = new Set<string>();
    while (parents.has(s) && !seen.has(s)) {
      seen.add(s);
      s = parents.get(s)!;
      d++;
    }
    // Above the batch, the kind of scope still orders the tree: org, team, project.
    return d + levelOf(s);
  };
  const out: Manifest[] = [];
  for (const kind of KIND_ORDER) {
    const group = ms.filter((m) => m.kind === kind);
    if (kind === 'Scope' || kind === 'Quota') {
      out.push(
        ...group
          .map((m, i) => ({ m, i, d: depth(m.name) }))
          .sort((a, b) => a.d - b.d || a.i - b.i)
          .map((x) => x.m),
      );
    } else if (kind === 'Model') {
      out.push(...topo(group, (m) => (m.body.spec?.fallback ? [m.body.spec.fallback] : [])));
    } else {
      out.push(...group);
    }
  }
  return out;
}

function levelOf(scope: string): number {
  if (scope.startsWith('org:')) return 0;
  if (scope.startsWith('team:')) return 1;
  if (scope.startsWith('project:')) return 2;
  return 3;
}

/** Depth-first topological sort over dependencies within the group, keeping input order where free. */
function topo(group: Manifest[], deps: (m: Manifest) => string[]): Manifest[] {
  const byName = new Map(group.map((m) => [m.name, m]));
  const done = new Set<string>();
  const visiting = new Set<string>();
  const out: Manifest[] = [];
  const visit = (m: Manifest) => {
    if (done.has(m.name) || visiting.has(m.name)) return;
    visiting.add(m.name);
    for (const d of deps(m)) {
      const dm = byName.get(d);
      if (dm) visit(dm);
    }
    visiting.delete(m.name);
    done.add(m.name);
    out.push(m);
  };
  group.forEach(visit);
  return out;
}

/** Delete in the reverse order: what depends on a resource goes before it. */
export function deleteOrder(ms: Manifest[]): Manifest[] {
  return applyOrder(ms).reverse();
}
