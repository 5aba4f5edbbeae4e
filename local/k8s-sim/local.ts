import { relative } from 'node:path';
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
