import type { Caller } from '../domain/access';
import { type ComputeCost, computeKey, costOverPeriod, SHARED } from '../domain/cost';
import type { ScopeTree } from '../domain/quota';
import type { Dependencies } from '.';
import { requireVisibleScope } from './scopes';

/**
 * Cost per scope (GET /v1/costs): the latest sample's rates and the period's sums, from the samples the
 * reconciler keeps (domain/cost.ts). A caller sees the scopes it may read and the computes it may see; with
 * `scope`, that scope and those beneath it. Totals across everything are for platform admins, since they
 * include what others run.
 */

// A millionth of a dollar is below any price's precision; it keeps float noise out of the answer.
const dollars = (x: number) => Math.round(x * 1e6) / 1e6;

export interface CostQuery {
  from: Date;
  to: Date;
  scope?: string;
  buckets: number;
}

export function costService(deps: Dependencies) {
  return {
    async view(caller: Caller<ScopeTree>, q: CostQuery) {
      const tree = caller.tenancy;
      if (q.scope) requireVisibleScope(caller, q.scope);
      const within = (owner: string | undefined) =>
        !q.scope || (owner !== undefined && tree.above(q.scope, owner));
      const showScope = (s: string) => (s === SHARED ? !q.scope : caller.can('read', s) && within(s));
      const showCompute = (c: Pick<ComputeCost, 'owner'>) => caller.canSee(c.owner) && within(c.owner);

      const samples = await deps.store.costs.listCostSamples(q.from, q.to);
      const { total, series } = costOverPeriod(samples, q.from, q.to, q.buckets);
      const latest = samples.at(-1);
      const now = new Map<string, number>();
      for (const c of latest?.computes ?? [])
        for (const [s, x] of Object.entries(c.scopes)) now.set(s, (now.get(s) ?? 0) + x);

      const scopeNames = [...new Set([...now.keys(), ...Object.keys(total.scopes)])].filter(showScope).sort();
      const latestComputes = new Map((latest?.computes ?? []).map((c) => [computeKey(c), c]));
      const computes = new Map<string, Pick<ComputeCost, 'compute' | 'owner'>>();
      for (const s of samples) for (const c of s.computes) if (showCompute(c)) computes.set(computeKey(c), c);
      const platform = caller.isPlatformAdmin && !q.scope;
      return {
        from: q.from.toISOString(),
        to: q.to.toISOString(),
        currency: latest?.currency ?? 'USD',
        samples: samples.length,
        ...(latest ? { latestAt: latest.at } : {}),
        scopes: scopeNames.map((scope) => ({
          scope,
          perHour: dollars(now.get(scope) ?? 0),
          cost: dollars(total.scopes[scope] ?? 0),
        })),
        computes: [...computes.entries()]
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([k, c]) => {
            const l = latestComputes.get(k);
            const t = total.computes[k];
            return {
              compute: c.compute,
              ...(c.owner ? { owner: c.owner } : {}),
              nodes: l?.nodes ?? 0,
              perHour: dollars(l?.perHour ?? 0),
              idlePerHour: dollars(l?.idle ?? 0),
              cost: dollars(t?.cost ?? 0),
              idle: dollars(t?.idle ?? 0),
            };
          }),
        ...(platform
          ? {
              total: {
                perHour: dollars((latest?.computes ?? []).reduce((n, c) => n + c.perHour, 0)),
                cost: dollars(total.total),
              },
            }
          : {}),
        series: series.map((b) => ({
          from: b.from,
          to: b.to,
          scopes: Object.fromEntries(
            Object.entries(b.scopes)
              .filter(([s]) => showScope(s))
              .map(([s, x]) => [s, dollars(x)]),
          ),
          idle: dollars(
            Object.entries(b.computes)
              .filter(([k]) => {
                const c = computes.get(k);
                return c !== undefined;
              })
              .reduce((n, [, x]) => n + x.idle, 0),
          ),
        })),
      };
    },
  };
}
