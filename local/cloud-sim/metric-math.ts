/**
 * The part of CloudWatch metric math llmcap's alarms use: metric ids, numbers, + - * / with parentheses, and
 * FILL(id, number). Evaluated per period: an operand missing in a period makes the result missing there, as in
 * CloudWatch; FILL gives every period of the queried range a value. Anything else is refused by name.
 */

export type Series = (number | undefined)[];

export type Expr =
  | { kind: 'number'; value: number }
  | { kind: 'ref'; id: string }
  | { kind: 'fill'; id: string; value: number }
  | { kind: 'binary'; op: '+' | '-' | '*' | '/'; left: Expr; right: Expr };

export class MathError extends Error {}

const SUPPORTED = 'the simulator evaluates metric ids, numbers, + - * /, parentheses and FILL(id, number)';

export function parseExpression(src: string): Expr {
  const tokens =
    src.match(/\s*([A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d+)?|[-+*/(),]|\S)/g)?.map((t) => t.trim()) ?? [];
  let i = 0;
  const peek = () => tokens[i];
  const take = (want?: string): string => {
    const t = tokens[i++];
    if (t === undefined || (want !== undefined && t !== want))
      throw new MathError(
        `Expression "${src}": expected ${want ?? 'more'}${t ? ` at "${t}"` : ' at the end'}; ${SUPPORTED}.`,
      );
    return t;
  };
  const number = (): number => {
    let neg = 1;
    if (peek() === '-') {
      take();
      neg = -1;
    }
    const t = take();
    if (!/^\d/.test(t)) throw new MathError(`Expression "${src}": "${t}" is not a number; ${SUPPORTED}.`);
    return neg * Number(t);
  };
  const factor = (): Expr => {
    const t = take();
    if (t === '(') {
      const e = sum();
      take(')');
      return e;
    }
    if (/^\d/.test(t)) return { kind: 'number', value: Number(t) };
    if (/^[A-Za-z_]/.test(t)) {
      if (peek() !== '(') {
        if (!/^[a-z][a-zA-Z0-9_]*$/.test(t))
          throw new MathError(`Expression "${src}": ${t} is not a metric id.`);
        return { kind: 'ref', id: t };
      }
      if (t !== 'FILL')
        throw new MathError(`Expression "${src}": the function ${t} is not simulated; ${SUPPORTED}.`);
      take('(');
      const id = take();
      if (!/^[a-z][a-zA-Z0-9_]*$/.test(id))
        throw new MathError(
          `Expression "${src}": FILL takes a metric id first (FILL(id, number)); ${SUPPORTED}.`,
        );
      take(',');
      const value = number();
      take(')');
      return { kind: 'fill', id, value };
    }
    throw new MathError(`Expression "${src}": unexpected "${t}"; ${SUPPORTED}.`);
  };
  const product = (): Expr => {
    let e = factor();
    while (peek() === '*' || peek() === '/') {
      const op = take() as '*' | '/';
      e = { kind: 'binary', op, left: e, right: factor() };
    }
    return e;
  };
  const sum = (): Expr => {
    let e = product();
    while (peek() === '+' || peek() === '-') {
      const op = take() as '+' | '-';
      e = { kind: 'binary', op, left: e, right: product() };
    }
    return e;
  };
  const e = sum();
  if (i < tokens.length) throw new MathError(`Expression "${src}": unexpected "${tokens[i]}"; ${SUPPORTED}.`);
  return e;
}

export function references(e: Expr): string[] {
  if (e.kind === 'ref' || e.kind === 'fill') return [e.id];
  if (e.kind === 'binary') return [...references(e.left), ...references(e.right)];
  return [];
}

export function evaluateExpression(e: Expr, resolve: (id: string) => Series, length: number): Series {
  switch (e.kind) {
    case 'number':
      return Array.from({ length }, () => e.value);
    case 'ref':
      return resolve(e.id);
    case 'fill':
      return resolve(e.id).map((v) => v ?? e.value);
    case 'binary': {
      const l = evaluateExpression(e.left, resolve, length);
      const r = evaluateExpression(e.right, resolve, length);
      return l.map((a, i) => {
        const b = r[i];
        if (a === undefined || b === undefined) return undefined;
        if (e.op === '+') return a + b;
        if (e.op === '-') return a - b;
        if (e.op === '*') return a * b;
        return b === 0 ? undefined : a / b;
      });
    }
  }
}
