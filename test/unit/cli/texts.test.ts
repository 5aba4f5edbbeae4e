import { summarize } from '../../../cli/commands/reconcile';
import { formatProblem } from '../../../cli/render';

/** What the CLI prints in words: a pass that set drift back says so, and an API route gets its command. */

it("says in a pass's summary that it repaired drift, and what and who had changed it", () => {
  const text = summarize({
    id: '20260105T101502123Z-0a1b2c3d',
    state: 'SUCCEEDED',
    durationMs: 1200,
    summary: {
      workflows: [],
      workloads: { repaired: [{ object: 'Deployment/ns/chat-l4', by: 'kubectl-edit' }] },
    },
  });
  expect(text.split('\n')).toContain('drift repaired: Deployment/ns/chat-l4 (changed by kubectl-edit)');
  expect(summarize({ id: 'x', state: 'SUCCEEDED', summary: { workflows: [] } })).not.toMatch(/drift/);
});

it('adds the CLI command beside each API route an error names, in the detail and in each field', () => {
  const text = formatProblem(
    404,
    {
      title: 'Not found',
      detail:
        'model chat is stored but left out; replace it with PUT /v1/models/chat or remove it with DELETE',
      errors: [
        {
          path: 'spec.profiles[0].compute',
          message: 'pin a compute that can hold it (GET /v1/computes lists them)',
        },
      ],
    },
    '',
  );
  expect(text).toBe(
    'error: Not found (404): model chat is stored but left out; replace it with PUT /v1/models/chat (llmcap apply -f FILE) or remove it with DELETE (llmcap delete model chat)\n' +
      '  spec.profiles[0].compute: pin a compute that can hold it (GET /v1/computes (llmcap get computes) lists them)',
  );
});
