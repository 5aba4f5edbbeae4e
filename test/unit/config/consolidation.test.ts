import { parseStageConfig } from '../../../infra/stage-config';
import { type ConsolidationPolicy, DEFAULT_CONSOLIDATION } from '../../../lambdas/domain/consolidation';

/** Consolidation's thresholds, budget and windows are the stage's to set (issue 34 §3). */

const stage = (consolidation?: unknown) => ({
  stage: 'prod',
  account: '123456789012',
  region: 'eu-west-1',
  clusterName: 'ml-platform',
  subnetIds: ['subnet-0abc1234'],
  admins: ['arn:aws:iam::123456789012:root'],
  ...(consolidation === undefined ? {} : { consolidation }),
});

describe('consolidation in the stage config', () => {
  it("defaults to the domain's policy, and a partial one keeps the other defaults", () => {
    const policy: ConsolidationPolicy = parseStageConfig(stage(), 'prod.json').consolidation;
    expect(policy).toEqual(DEFAULT_CONSOLIDATION);
    const set = parseStageConfig(
      stage({
        minSavingPerHour: 5,
        protectedWindows: [{ days: [1, 2, 3, 4, 5], from: '08:00', to: '18:00' }],
      }),
      'prod.json',
    ).consolidation;
    expect(set).toEqual({
      ...DEFAULT_CONSOLIDATION,
      minSavingPerHour: 5,
      protectedWindows: [{ days: [1, 2, 3, 4, 5], from: '08:00', to: '18:00' }],
    });
  });

  it('fails synth naming every bad field', () => {
    const run = () =>
      parseStageConfig(
        stage({ minSavingShare: 2, protectedWindows: [{ from: '8am', to: '24:00' }] }),
        'prod.json',
      );
    expect(run).toThrow(/consolidation\.minSavingShare: /);
    expect(run).toThrow(/consolidation\.protectedWindows\.0\.from: a time of day in UTC such as 08:00/);
    expect(run).toThrow(/consolidation\.protectedWindows\.0\.to: a time of day in UTC such as 18:00/);
  });
});
