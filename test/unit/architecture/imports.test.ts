import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import * as ts from 'typescript';

/**
 * The layers of lambdas/ (docs/design.md, Layers), read from the import statements themselves: handlers call
 * services, services let the domain decide and write through the store and the AWS adapters, and nothing points
 * back. The domain is pure: it imports nothing outside itself, and no AWS SDK. A type-only import is an arrow
 * too (a layer should not even name what lies above it), but it is left out of the cycle check: it vanishes at
 * run time and cannot leave a module half-initialised.
 */

const ROOT = resolve(__dirname, '../../../lambdas');

type Layer = 'api' | 'reconcile' | 'admitter' | 'service' | 'store' | 'aws' | 'shared' | 'domain';

/** What each layer may import, itself included. */
const ALLOWED: Record<Layer, readonly Layer[]> = {
  api: ['api', 'service', 'domain', 'shared'],
  reconcile: ['reconcile', 'service', 'domain', 'shared'],
  admitter: ['admitter', 'service', 'domain', 'shared'],
  service: ['service', 'domain', 'store', 'aws', 'shared'],
  store: ['store', 'domain', 'shared'],
  aws: ['aws', 'domain', 'shared'],
  shared: ['shared', 'domain'],
  domain: ['domain'],
};

/** Packages a layer may not import: the AWS SDK is the store's and the adapters' (and the clients module's). */
const FORBIDDEN_PACKAGES: Partial<Record<Layer, RegExp>> = {
  domain: /^(@aws-sdk\/|@aws-lambda-powertools\/|@middy\/|aws-lambda$)/,
  service: /^@aws-sdk\//,
  api: /^@aws-sdk\//,
};

interface Edge {
  from: string;
  to: string;
  typeOnly: boolean;
}

interface Graph {
  files: string[];
  edges: Edge[];
  packages: { from: string; name: string }[];
}

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? walk(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

function resolveModule(from: string, spec: string, files: Set<string>): string | undefined {
  const base = resolve(dirname(from), spec);
  return [`${base}.ts`, join(base, 'index.ts'), base].find((f) => files.has(f));
}

/** Every import, export-from, require() and import() of every module under lambdas/. */
function importGraph(root: string): Graph {
  const files = walk(root);
  const known = new Set(files);
  const edges: Edge[] = [];
  const packages: Graph['packages'] = [];
  for (const file of files) {
    const src = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    const add = (spec: string, typeOnly: boolean) => {
      if (!spec.startsWith('.')) {
        packages.push({ from: file, name: spec });
        return;
      }
      const to = resolveModule(file, spec, known);
      if (!to)
        throw new Error(`${relative(root, file)} imports ${spec}, which is not a module under lambdas/`);
      edges.push({ from: file, to, typeOnly });
    };
    const visit = (n: ts.Node): void => {
      if (ts.isImportDeclaration(n) && ts.isStringLiteral(n.moduleSpecifier)) {
        const c = n.importClause;
        const onlyTypes =
          !!c &&
          (c.isTypeOnly ||
            (!c.name &&
              !!c.namedBindings &&
              ts.isNamedImports(c.namedBindings) &&
              c.namedBindings.elements.length > 0 &&
              c.namedBindings.elements.every((e) => e.isTypeOnly)));
        add(n.moduleSpecifier.text, onlyTypes);
      } else if (ts.isExportDeclaration(n) && n.moduleSpecifier && ts.isStringLiteral(n.moduleSpecifier)) {
        add(n.moduleSpecifier.text, n.isTypeOnly);
      } else if (
        ts.isImportTypeNode(n) &&
        ts.isLiteralTypeNode(n.argument) &&
        ts.isStringLiteral(n.argument.literal)
      ) {
        add(n.argument.literal.text, true);
      } else if (
        ts.isCallExpression(n) &&
        (n.expression.kind === ts.SyntaxKind.ImportKeyword ||
          (ts.isIdentifier(n.expression) && n.expression.text === 'require')) &&
        n.arguments.length === 1 &&
        ts.isStringLiteral(n.arguments[0]!)
      ) {
        add((n.arguments[0] as ts.StringLiteral).text, false);
      }
      ts.forEachChild(n, visit);
    };
    visit(src);
  }
  return { files, edges, packages };
}

function layerOf(root: string, file: string): Layer {
  const top = relative(root, file).split(/[\\/]/)[0]!;
  if (!(top in ALLOWED)) throw new Error(`lambdas/${top} is in no layer; add it to ALLOWED in this test`);
  return top as Layer;
}

/** Each import that points from a layer to one it may not use, as "from → to". */
function arrowsBack(root: string, g: Graph): string[] {
  const out: string[] = [];
  for (const e of g.edges) {
    const [a, b] = [layerOf(root, e.from), layerOf(root, e.to)];
    if (!ALLOWED[a].includes(b))
      out.push(`${relative(root, e.from)} → ${relative(root, e.to)} (${a} may not import ${b})`);
  }
  for (const p of g.packages) {
    const layer = layerOf(root, p.from);
    if (FORBIDDEN_PACKAGES[layer]?.test(p.name))
      out.push(`${relative(root, p.from)} → ${p.name} (${layer} may not import it)`);
  }
  return out;
}

/** The cycles of run-time imports (Tarjan's strongly connected components of more than one module, or a self-import). */
function cycles(root: string, g: Graph): string[][] {
  const next = new Map<string, string[]>(g.files.map((f) => [f, []]));
  for (const e of g.edges) if (!e.typeOnly) next.get(e.from)!.push(e.to);
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const strong = (v: string) => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v)!) {
      if (!idx.has(w)) {
        strong(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        scc.push(relative(root, w));
      } while (w !== v);
      if (scc.length > 1 || next.get(v)!.includes(v)) out.push(scc.sort());
    }
  };
  for (const f of g.files) if (!idx.has(f)) strong(f);
  return out;
}

describe('the import graph of lambdas/', () => {
  const graph = importGraph(ROOT);

  it('reads every module and finds the imports between them', () => {
    // A parser that saw nothing would pass every rule below.
    expect(graph.files.length).toBeGreaterThan(50);
    const rel = (e: Edge) => `${relative(ROOT, e.from)} → ${relative(ROOT, e.to)}`;
    expect(graph.edges.map(rel)).toEqual(expect.arrayContaining(['api/app.ts → service/index.ts']));
  });

  it('has no arrow back: api → service → domain / store / aws, and the domain imports only itself', () => {
    expect(arrowsBack(ROOT, graph)).toEqual([]);
  });

  it('has no cycle of run-time imports', () => {
    expect(cycles(ROOT, graph)).toEqual([]);
  });

  it('would report an arrow back and a cycle', () => {
    const f = (p: string) => join(ROOT, p);
    const bad: Graph = {
      files: [f('domain/a.ts'), f('store/b.ts'), f('service/c.ts'), f('service/d.ts')],
      edges: [
        { from: f('domain/a.ts'), to: f('store/b.ts'), typeOnly: true },
        { from: f('store/b.ts'), to: f('service/c.ts'), typeOnly: false },
        { from: f('service/c.ts'), to: f('service/d.ts'), typeOnly: false },
        { from: f('service/d.ts'), to: f('service/c.ts'), typeOnly: false },
      ],
      packages: [{ from: f('domain/a.ts'), name: '@aws-sdk/client-eks' }],
    };
    expect(arrowsBack(ROOT, bad)).toEqual([
      'domain/a.ts → store/b.ts (domain may not import store)',
      'store/b.ts → service/c.ts (store may not import service)',
      'domain/a.ts → @aws-sdk/client-eks (domain may not import it)',
    ]);
    expect(cycles(ROOT, bad)).toEqual([['service/c.ts', 'service/d.ts']]);
  });
});
