/**
 * The little of the Kubernetes OpenAPI schema that merging needs: which lists are associative (and by which
 * keys), which are sets, which fields are atomic, which objects are free-form maps. Server-side apply
 * (x-kubernetes-list-type / -map-keys) and strategic merge patch (patchMergeKey) read it. A path is the field
 * names from the object's root, with `[]` for a list element, e.g. `spec.template.spec.containers.[].ports`.
 * Lists not named here are atomic, as structured-merge-diff treats lists without a list type.
 */

export type ListType = { type: 'atomic' } | { type: 'set' } | { type: 'map'; keys: string[] };

const PORT_KEYS = ['containerPort', 'protocol'];

function last(path: readonly string[], n = 0): string | undefined {
  return path[path.length - 1 - n];
}

/** True when the path is inside a container of a pod spec (containers, initContainers, ephemeralContainers). */
function inContainer(path: readonly string[]): boolean {
  const p = last(path, 1);
  return last(path) === '[]' && (p === 'containers' || p === 'initContainers' || p === 'ephemeralContainers');
}

export function listType(path: readonly string[]): ListType {
  const name = last(path);
  const parent = path.slice(0, -1);
  switch (name) {
    case 'containers':
    case 'initContainers':
    case 'ephemeralContainers':
    case 'volumes':
    case 'imagePullSecrets':
    case 'env':
    case 'containerStatuses':
    case 'initContainerStatuses':
      return { type: 'map', keys: ['name'] };
    case 'volumeMounts':
      return { type: 'map', keys: ['mountPath'] };
    case 'ports':
      if (inContainer(parent)) return { type: 'map', keys: PORT_KEYS };
      if (last(parent) === 'spec') return { type: 'map', keys: ['port', 'protocol'] };
      return { type: 'atomic' };
    case 'conditions':
      return { type: 'map', keys: ['type'] };
    case 'ownerReferences':
      return { type: 'map', keys: ['uid'] };
    case 'topologySpreadConstraints':
      return { type: 'map', keys: ['topologyKey', 'whenUnsatisfiable'] };
    case 'finalizers':
    case 'podCIDRs':
      return { type: 'set' };
    case 'addresses':
      return last(parent) === 'status' ? { type: 'map', keys: ['type'] } : { type: 'atomic' };
    default:
      return { type: 'atomic' };
  }
}

/** Default values of list-map keys, as the schema declares them (ports default to TCP). */
export function keyDefault(key: string): unknown {
  return key === 'protocol' ? 'TCP' : undefined;
}

/** Structs and maps that are replaced whole (+structType=atomic / +mapType=atomic). */
export function isAtomicObject(path: readonly string[]): boolean {
  const name = last(path);
  // metav1.LabelSelector is atomic wherever it appears; so are a Service's selector and a pod's nodeSelector.
  return (
    name === 'selector' || name === 'labelSelector' || name === 'namespaceSelector' || name === 'nodeSelector'
  );
}

/** Objects whose keys are data, not schema fields: each key is a field of its own in a field set. */
export function isFreeMap(path: readonly string[]): boolean {
  const name = last(path);
  return (
    name === 'labels' ||
    name === 'annotations' ||
    name === 'limits' ||
    name === 'requests' ||
    name === 'capacity' ||
    name === 'allocatable' ||
    name === 'data' ||
    name === 'stringData' ||
    name === 'disruptedPods'
  );
}
