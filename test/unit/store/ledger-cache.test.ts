import * as fc from 'fast-check';
import { applyToOverlay, type Overlay, type TxItem } from '../../../lambdas/store/ledger-cache';

/**
 * A group of decisions reads the ledger partitions from an overlay that each decision's writes move on
 * (lambdas/store/ledger-cache.ts): after any writes, it must be what a Query would return, in sort-key order.
 */

const sk = fc.constantFrom('a', 'b', 'b-1', 'c', 'm:x', 'z', 'Z', 'a0', 'aa');
const write = fc.oneof(
  fc.record({ put: sk, n: fc.integer() }).map(
    ({ put, n }): TxItem => ({
      Put: { TableName: 't', Item: { pk: 'MODEL', sk: put, n, gone: undefined } },
    }),
  ),
  sk.map((del): TxItem => ({ Delete: { TableName: 't', Key: { pk: 'MODEL', sk: del } } })),
);

it('applying writes to an overlay gives what a Query of the table would then return', () => {
  fc.assert(
    fc.property(
      fc.uniqueArray(sk),
      fc.array(fc.array(write, { maxLength: 5 }), { maxLength: 6 }),
      (start, groups) => {
        const table = new Map<string, Record<string, unknown>>(
          start.map((k) => [k, Object.freeze({ pk: 'MODEL', sk: k, n: 0 })]),
        );
        const overlay: Overlay = new Map([
          ['MODEL', [...table.values()].sort((x, y) => (String(x.sk) < String(y.sk) ? -1 : 1))],
        ]);
        for (const items of groups) {
          applyToOverlay(overlay, items);
          for (const it of items) {
            if (it.Put)
              table.set(String(it.Put.Item!.sk), { pk: 'MODEL', sk: it.Put.Item!.sk, n: it.Put.Item!.n });
            else table.delete(String(it.Delete!.Key!.sk));
          }
          const query = [...table.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, r]) => r);
          expect(overlay.get('MODEL')).toEqual(query);
          for (const r of overlay.get('MODEL')!) expect(Object.isFrozen(r)).toBe(true);
        }
      },
    ),
  );
});
