import type { PodSelector } from '../cloud-sim/config';
import { globMatch } from '../cloud-sim/config';
import type { KObject } from './types';

/** Names the simulated components share: field managers, well-known labels and taints. */

export const MANAGERS = {
  controllers: 'kube-controller-manager',
  scheduler: 'kube-scheduler',
  kubelet: 'kubelet',
  eks: 'eks-nodegroup',
} as const;

export const LABELS = {
  nodegroup: 'eks.amazonaws.com/nodegroup',
  capacityType: 'eks.amazonaws.com/capacityType',
  instanceType: 'node.kubernetes.io/instance-type',
  zone: 'topology.kubernetes.io/zone',
  region: 'topology.kubernetes.io/region',
  arch: 'kubernetes.io/arch',
  os: 'kubernetes.io/os',
  hostname: 'kubernetes.io/hostname',
  podTemplateHash: 'pod-template-hash',
} as const;

export const TAINTS = {
  notReady: 'node.kubernetes.io/not-ready',
  unschedulable: 'node.kubernetes.io/unschedulable',
} as const;

export function matchesPodSelector(rule: PodSelector, pod: KObject, image: string): boolean {
  if (rule.namespace !== undefined && !globMatch(rule.namespace, pod.metadata?.namespace ?? '')) return false;
  if (rule.image !== undefined && !globMatch(rule.image, image)) return false;
  return true;
}
