import '../../../local/sfn/polyfill';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { StateMachine, type StateMachineDefinition } from 'aws-local-stepfunctions';
import { ownsNodegroup } from '../../../lambdas/domain/nodegroup';
import { buildWorkflowInput } from '../../../lambdas/service/workflows';
import { builtin } from '../../helpers/computes';

/**
 * provision-nodegroup adopts a group that already holds the name only when its tags say it is this compute's.
 * The rule lives twice, in the ASL's CheckNodegroup Choice and in domain/nodegroup.ts (which reconcile's
 * observation uses): this runs that Choice, as written, on every combination of tags and checks both agree.
 */

const def = JSON.parse(
  readFileSync(join(__dirname, '..', '..', '..', 'statemachines', 'provision-nodegroup.asl.json'), 'utf8'),
) as { States: Record<string, Record<string, unknown>> };

/** The Choice alone, every target replaced by a Pass that names the verdict. */
function checkOnly(): StateMachineDefinition {
  const choice = JSON.parse(JSON.stringify(def.States.CheckNodegroup)) as Record<string, unknown>;
  const retarget = (r: Record<string, unknown>) => ({
    ...r,
    Next: r.Next === 'NotOurs' ? 'Foreign' : 'Ours',
  });
  choice.Choices = (choice.Choices as Record<string, unknown>[]).map(retarget);
  choice.Default = 'Ours';
  return {
    StartAt: 'CheckNodegroup',
    States: {
      CheckNodegroup: choice,
      Ours: { Type: 'Pass', Result: 'ours', End: true },
      Foreign: { Type: 'Pass', Result: 'foreign', End: true },
    },
  } as unknown as StateMachineDefinition;
}

const { spec } = builtin('cpu-small');

const values = {
  'llmcap:stage': [undefined, 'prod', 'dev'],
  'llmcap:compute': [undefined, 'cpu-a', 'cpu-b'],
  'llmcap:compute-id': [undefined, '', 'k7m2q9xa4bc0', 'z0y1x2w3v4t5'],
} as const;

function* tagSets(): Generator<Record<string, string>> {
  for (const stage of values['llmcap:stage'])
    for (const compute of values['llmcap:compute'])
      for (const id of values['llmcap:compute-id']) {
        const tags: Record<string, string> = { team: 'data' };
        if (stage !== undefined) tags['llmcap:stage'] = stage;
        if (compute !== undefined) tags['llmcap:compute'] = compute;
        if (id !== undefined) tags['llmcap:compute-id'] = id;
        yield tags;
      }
}

describe('CheckNodegroup (provision-nodegroup.asl.json) and ownsNodegroup', () => {
  const machine = new StateMachine(checkOnly(), { validationOptions: { noValidate: true } });

  it.each([
    ['a compute with an id', { uid: 'k7m2q9xa4bc0' }],
    ['a compute stored before ids existed', {}],
  ])('agree on every combination of llmcap tags, for %s', async (_what, extra) => {
    const compute = { name: 'cpu-a', spec, createdAt: '2026-01-01T00:00:00.000Z', ...extra };
    const input = buildWorkflowInput(compute, {
      kind: 'provision',
      generation: 1,
      desiredNodes: 1,
      stage: 'prod',
    });
    let disagreements = 0;
    let adopted = 0;
    for (const tags of tagSets()) {
      // What the DescribeNodegroup task hands the Choice: our keys merged over the defaults of the input.
      const observed = {
        Status: 'ACTIVE',
        Tags: { ...input.absent.tags, ...tags },
        At: '2026-01-01T00:00:01.000Z',
      };
      const verdict = await machine.run({ ...input, observed } as never).result;
      const ours = ownsNodegroup(tags, input.owner);
      if ((verdict === 'ours') !== ours) disagreements++;
      if (ours) adopted++;
    }
    expect(disagreements).toBe(0);
    // Sanity: the table has groups of both kinds.
    expect(adopted).toBeGreaterThan(0);
  });
});
