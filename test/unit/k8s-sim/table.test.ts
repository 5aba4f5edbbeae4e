import { DEPLOYMENTS, REPLICASETS } from '../../../local/k8s-sim/resources';
import { toTable } from '../../../local/k8s-sim/table';

/** `kubectl get deployments|replicasets` prints the API server's Table: its columns and cells are these. */

const now = Date.parse('2026-01-01T00:10:00Z');
const template = {
  spec: {
    containers: [
      { name: 'vllm', image: 'vllm/vllm-openai:v0.6' },
      { name: 'proxy', image: 'envoy:1' },
    ],
  },
};
const metadata = { name: 'emb', namespace: 'team-a', creationTimestamp: '2026-01-01T00:05:00Z' };
const selector = { matchLabels: { app: 'emb' } };

const table = (def: typeof DEPLOYMENTS, o: object) => {
  const t = toTable(def, [o as never], {}, now, 'None');
  return { columns: t.columnDefinitions.map((c) => c.name), cells: t.rows[0]?.cells };
};

it('prints a Deployment as kubectl shows it: READY n/m, UP-TO-DATE, AVAILABLE, AGE, then the wide columns', () => {
  const d = {
    kind: 'Deployment',
    metadata,
    spec: { replicas: 3, selector, template },
    status: { readyReplicas: 2, updatedReplicas: 3, availableReplicas: 2 },
  };
  expect(table(DEPLOYMENTS, d)).toEqual({
    columns: ['Name', 'Ready', 'Up-to-date', 'Available', 'Age', 'Containers', 'Images', 'Selector'],
    cells: ['emb', '2/3', 3, 2, '5m', 'vllm,proxy', 'vllm/vllm-openai:v0.6,envoy:1', 'app=emb'],
  });
});

it('prints a ReplicaSet with DESIRED, CURRENT, READY counts, zero where its status has none yet', () => {
  const rs = {
    kind: 'ReplicaSet',
    metadata: { ...metadata, name: 'emb-7d' },
    spec: { replicas: 2, selector, template },
  };
  expect(table(REPLICASETS, rs)).toEqual({
    columns: ['Name', 'Desired', 'Current', 'Ready', 'Age', 'Containers', 'Images', 'Selector'],
    cells: ['emb-7d', 2, 0, 0, '5m', 'vllm,proxy', 'vllm/vllm-openai:v0.6,envoy:1', 'app=emb'],
  });
});
