import loadHighs from 'highs';
import type { MipAnswer, MipSolver } from '../lambdas/domain/placement/exact';

/**
 * The MipSolver of lambdas/domain/placement/exact.ts on HiGHS compiled to WebAssembly (the `highs` package).
 * Loading the WebAssembly is asynchronous; each solve after that is synchronous, on a fresh model.
 */
export async function highsSolver(): Promise<MipSolver> {
  const highs = await loadHighs();
  const status = highs.constants.modelStatus;
  return {
    solve(lp, { timeLimitS, start }): MipAnswer {
      const model = highs.createModel({ format: 'lp', data: lp });
      try {
        // mip_rel_gap 0: "optimal" means proven, not within HiGHS's default 0.01% of the bound.
        model.options.set({ output_flag: false, time_limit: timeLimitS, mip_rel_gap: 0 });
        const cols = new Map<string, number>();
        const n = model.getDimensions().numCols;
        for (let c = 0; c < n; c++) cols.set(model.getColName(c), c);
        if (start) {
          const dense = new Float64Array(n);
          for (const [name, v] of Object.entries(start)) {
            const c = cols.get(name);
            if (c !== undefined) dense[c] = v;
          }
          model.setSolution({ colValue: dense });
        }
        model.run();
        const s = model.getModelStatus();
        const values: Record<string, number> = {};
        const hasSolution = s === status.optimal || model.info.get('primal_solution_status') === 2;
        if (hasSolution) {
          const v = model.getSolution().colValue;
          for (const [name, c] of cols) values[name] = v[c]!;
        }
        const objective = hasSolution ? model.getObjectiveValue() : Number.POSITIVE_INFINITY;
        const bound = Number(model.info.get('mip_dual_bound'));
        return {
          status: s === status.optimal ? 'optimal' : hasSolution ? 'feasible' : 'none',
          objective,
          bound: s === status.optimal ? objective : Number.isFinite(bound) ? bound : 0,
          values,
        };
      } finally {
        model.dispose();
      }
    },
  };
}
