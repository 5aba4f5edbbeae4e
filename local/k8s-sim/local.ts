import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { ClusterClient } from '../../lambdas/aws/kubernetes';
import { type K8sObject, reconcilerAccess } from '../../lambdas/domain/workloads';
import type { CloudSim } from '../cloud-sim';

/**
 * The local control plane's use of the simulated cluster: a kubeconfig on disk for kubectl and
 * @kubernetes/client-node, and the banner line that says where it is.
 */
export function writeLocalKubeconfig(sim: CloudSim, path: string): string | undefined {
  if (!sim.kubernetes) return undefined;
  sim.kubernetes.writeKubeconfig(path);
  const shown = relative(process.cwd(), path) || path;
  return `Kubernetes API   ${sim.kubernetes.endpoint} (kubeconfig ${shown}: kubectl --kubeconfig ${shown} get nodes)`;
}

/**
 * The reconciler's access to the simulated cluster, as the stack and a cluster admin grant it in AWS
 * (docs/workloads.md#access-to-the-cluster): the local credentials are the reconciler role's session, its access
 * entry is the stack's (`reconcilerAccess`), and the cluster-scoped RBAC is config/kubernetes/reconciler-rbac.yaml,
 * applied with the admin token as `kubectl apply -f` would.
 */
export async function grantReconcilerAccess(
  sim: CloudSim,
  opts: { stage: string; accessKeyId: string; secretAccessKey: string; accountId?: string },
): Promise<void> {
  const k8s = sim.kubernetes;
  if (!k8s) return;
  const account = opts.accountId ?? '000000000000';
  const role = `llmcap-${opts.stage}-reconciler`;
  k8s.allow(
    {
      accessKeyId: opts.accessKeyId,
      secretAccessKey: opts.secretAccessKey,
      arn: `arn:aws:sts::${account}:assumed-role/${role}/llmcap-${opts.stage}-reconcile`,
    },
    { principalArn: `arn:aws:iam::${account}:role/${role}`, ...reconcilerAccess(opts.stage) },
  );
  const admin = new ClusterClient({ server: k8s.endpoint, caData: k8s.caData, token: k8s.adminToken });
  const file = join(__dirname, '..', '..', 'config', 'kubernetes', 'reconciler-rbac.yaml');
  for (const doc of parseAllDocuments(readFileSync(file, 'utf8'))) {
    const obj = doc.toJS() as K8sObject | null;
    if (obj) await admin.apply(obj, 'kubectl');
  }
}
