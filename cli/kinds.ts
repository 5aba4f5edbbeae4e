import type { Client } from './client';
import { seg, UsageError } from './command';
import { type Amounts, age, amounts, fields, fmt, indent, type Row, table } from './render';

/**
 * The resource kinds the CLI knows: where they live in the API, how a list looks as a table, and how
 * `describe` explains one. Shapes not fixed by the contract yet (scopes, quotas) are read defensively.
 */

export type Item = Record<string, any>;

export interface Kind {
  /** Singular, as in `get compute NAME`. */
  name: string;
  plural: string;
  aliases: string[];
  /** The manifest kind, for apply; absent for read-only listings (sources). */
  manifestKind?: 'Compute' | 'Model' | 'Scope' | 'Quota';
  path: string;
  /** Only listable (GET /v1/sources has no item route). */
  listOnly?: boolean;
  deletable: boolean;
  columns(wide: boolean): string[];
  row(item: Item, wide: boolean): Row;
  describe?(item: Item, client: Client): Promise<string>;
  /** Has recent events (GET <path>/NAME/events), which describe lists under its text. */
  events?: boolean;
}

export function nameOf(item: Item): string {
  return String(item?.metadata?.name ?? item?.name ?? item?.scope ?? item?.source ?? '');
}

const specOf = (item: Item): Item => item?.spec ?? item ?? {};

/**
 * `short 4m` while EC2 has no capacity for the compute, `short in us-east-1a` while it has none in some of its
 * zones (the group launches in the others), `2 idle` with nodes that take no pods, else `ok`.
 */
function capacityText(s: Item): string {
  const idle = Array.isArray(s.idleNodes) ? s.idleNodes.length : 0;
  const zones = Array.isArray(s.shortZones) ? s.shortZones.map((z: Item) => z.zone) : [];
  const parts = [
    ...(s.shortOfCapacity ? [`short ${age(s.shortOfCapacity.since) ?? ''}`.trim()] : []),
    ...(!s.shortOfCapacity && zones.length ? [`short in ${zones.join(' ')}`] : []),
    ...(idle ? [`${idle} idle`] : []),
  ];
  return parts.length ? parts.join(', ') : 'ok';
}

function gpuText(gpu: Item | undefined): string | undefined {
  if (!gpu) return undefined;
  return `${gpu.count ?? 1}×${gpu.type ?? 'GPU'}`;
}

const compute: Kind = {
  name: 'compute',
  plural: 'computes',
  aliases: ['co'],
  manifestKind: 'Compute',
  path: '/v1/computes',
  events: true,
  deletable: true,
  columns: (wide) => [
    'NAME',
    'INSTANCE',
    'GPU',
    'CPU',
    'MEMORY',
    'NODEGROUP',
    'READY',
    'NEEDED',
    'MAX',
    'CAPACITY',
    '$/H',
    'OWNER',
    ...(wide ? ['NODEGROUP NAME', 'MESSAGE'] : []),
  ],
  row: (c, wide) => {
    const n = c.spec?.node ?? {};
    const s = c.status ?? {};
    return [
      nameOf(c),
      n.instanceType,
      gpuText(n.gpu) ?? 'none',
      n.cpu,
      n.memoryGb === undefined ? undefined : `${fmt(n.memoryGb)}Gi`,
      (s.deletionRequested ? 'DELETING' : undefined) ?? s.nodegroupStatus,
      s.desiredNodes === undefined ? undefined : `${s.readyNodes ?? 0}/${s.desiredNodes}`,
      s.neededNodes,
      c.spec?.nodeGroup?.maxNodes,
      // Issue 32: whether EC2 has the nodes (short since when), and how many nodes take no pods.
      capacityText(s),
      c.spec?.cost?.perHour,
      c.metadata?.owner ?? (c.metadata?.builtin ? 'built-in' : undefined),
      ...(wide ? [s.nodegroupName, s.shortOfCapacity?.message ?? s.statusMessage] : []),
    ];
  },
  async describe(c) {
    const m = c.metadata ?? {};
    const n = c.spec?.node ?? {};
    const s = c.status ?? {};
    const gpu = n.gpu
      ? `${n.gpu.count ?? 1} × ${n.gpu.type}${n.gpu.memoryGb ? ` (${n.gpu.memoryGb} GiB)` : ''}`
      : 'none';
    const a = s.allocatable;
    const out = [
      fields([
        ['Name', m.name],
        ['Owner', m.owner ?? (m.builtin ? 'platform (built-in)' : 'platform')],
        ['Version', versionLine(m)],
        ['Instance', `${n.instanceType} (${n.capacityType ?? 'ON_DEMAND'}, ${n.amiType ?? '-'})`],
        ['CPU / memory', `${n.cpu} vCPU, ${n.memoryGb} GiB, ${n.diskSizeGb ?? 100} GiB disk`],
        ['GPU', gpu],
        [
          'Allocatable',
          a
            ? `${a.millicores} m CPU, ${a.memoryMiB} MiB, ${a.gpus ?? 0} GPU per node` +
              (s.allocatableSource === 'observed'
                ? ' (as its nodes report)'
                : s.allocatableSource === 'formula'
                  ? " (EKS's formula; no node of the type seen yet)"
                  : '')
            : undefined,
        ],
        ['Cost', c.spec?.cost ? `${c.spec.cost.perHour} ${c.spec.cost.currency ?? 'USD'}/h` : undefined],
        // The id tags the node group (llmcap:compute-id): what to compare when a group's owner is in doubt.
        [
          'Node group',
          s.nodegroupName ? `${s.nodegroupName} (llmcap:compute-id=${m.uid ?? '-'})` : undefined,
        ],
        ['Status', s.deletionRequested ? `${s.nodegroupStatus} (deletion requested)` : s.nodegroupStatus],
        [
          'Nodes',
          `${s.readyNodes ?? 0} ready, ${s.desiredNodes ?? 0} desired, ${s.neededNodes ?? 0} needed ` +
            `(lower bound ${s.lowerBoundNodes ?? 0}), at most ${c.spec?.nodeGroup?.maxNodes ?? '-'}` +
            // Issue 32 §3: booting for replicas a capacity shortage elsewhere moves here when its grace ends.
            (s.aheadNodes ? `; ${s.aheadNodes} of them ahead of replicas moving here` : ''),
        ],
        ['Taint', s.taint],
        ['Message', s.statusMessage ?? ''],
        // Nodes an AWS quota holds back (docs/operations.md, Quotas of the account and the cluster).
        ['Pending', s.pendingReason],
        // Issue 32 (docs/operations.md, Capacity that exists).
        [
          'Idle nodes',
          Array.isArray(s.idleNodes) && s.idleNodes.length
            ? `${s.idleNodes.map((n: Item) => `${n.node} (${n.why})`).join(', ')}; ${s.replacementNodes ?? 0} replacing them`
            : undefined,
        ],
        [
          'Short of capacity',
          s.shortOfCapacity
            ? `since ${s.shortOfCapacity.since}, next launch attempt at ${s.shortOfCapacity.nextProbeAt}: ${s.shortOfCapacity.message}`
            : undefined,
        ],
        ['Zones', Array.isArray(s.zones) ? s.zones.join(', ') : undefined],
        [
          'Zones short',
          Array.isArray(s.shortZones) && s.shortZones.length
            ? s.shortZones
                .map((z: Item) => `${z.zone} since ${z.since} (tried again after ${z.until}): ${z.message}`)
                .join('; ')
            : undefined,
        ],
        ['Status since', s.lastReconciledAt],
      ]),
    ];
    if (Array.isArray(s.healthIssues) && s.healthIssues.length) {
      out.push('Health issues:');
      for (const h of s.healthIssues) out.push(`  ${h.code}: ${h.message}`);
    }
    if (s.workflow) out.push(`Workflow:\n${indent(yamlish(s.workflow))}`);
    return out.join('\n');
  },
};

const model: Kind = {
  name: 'model',
  plural: 'models',
  aliases: ['mo'],
  manifestKind: 'Model',
  path: '/v1/models',
  events: true,
  deletable: true,
  columns: (wide) => [
    'NAME',
    'OWNER',
    'CLASS',
    'REPLICAS',
    'MIN-MAX',
    'PENDING',
    'ENGINE',
    'PROFILES',
    'DECLARED',
    ...(wide ? ['SOURCE', 'FALLBACK', 'PLACEMENTS'] : []),
  ],
  row: (m, wide) => {
    const s = m.status ?? {};
    const sc = m.spec?.scaling ?? {};
    const target = s.targetReplicas ?? sc.target ?? sc.min;
    return [
      nameOf(m),
      m.metadata?.owner || 'shared',
      s.effectiveClass ?? m.spec?.class,
      s.admitted === undefined ? `-/${target}` : `${s.admitted}/${target}`,
      `${sc.min}-${sc.max}`,
      s.pending ?? (s.admitted === undefined ? undefined : 0),
      m.spec?.engine,
      (m.spec?.profiles ?? []).map((p: Item) => p.name).join(','),
      (s.declared ?? m.metadata?.declared) ? 'yes' : 'no',
      ...(wide
        ? [
            m.spec?.source,
            m.spec?.fallback,
            (s.placements ?? []).map((p: Item) => `${p.compute}:${p.profile}×${p.replicas}`).join(','),
          ]
        : []),
    ];
  },
  async describe(m) {
    const md = m.metadata ?? {};
    const sp = m.spec ?? {};
    const s = m.status ?? {};
    const sc = sp.scaling ?? {};
    const out = [
      fields([
        ['Name', md.name],
        ['Owner', md.owner || 'shared (counts against no scope)'],
        ['Declared', (s.declared ?? md.declared) ? 'yes (config/catalog.yaml; change it there)' : 'no'],
        ['Version', versionLine(md)],
        ['Source', sp.source],
        ['Engine', sp.engine],
        ['Class', sp.class ? sp.class : `${s.effectiveClass ?? '-'} (implied by scaling)`],
        ['Scaling', `min ${sc.min}, target ${sc.target ?? sc.min}, max ${sc.max}`],
        ['Fallback', sp.fallback ?? ''],
        [
          'Replicas',
          s.admitted === undefined
            ? 'no admission decision yet'
            : `${s.admitted} admitted (${s.borrowed ?? 0} borrowed), ${s.pending ?? 0} pending`,
        ],
      ]),
      '',
      'Profiles (in order of preference):',
      indent(
        table(
          ['NAME', 'GPUS', 'GPU TYPE', 'CPU CORES', 'MIN MEMORY', 'COMPUTE'],
          (sp.profiles ?? []).map((p: Item) => [
            p.name,
            p.gpus,
            p.gpuType,
            p.cpuCores,
            p.minMemoryGb === undefined ? undefined : `${p.minMemoryGb}Gi`,
            p.compute ?? 'cheapest that fits',
          ]),
        ),
      ),
    ];
    if (Array.isArray(s.placements) && s.placements.length) {
      out.push(
        '',
        'Placements:',
        indent(
          table(
            ['COMPUTE', 'PROFILE', 'REPLICAS'],
            s.placements.map((p: Item) => [p.compute, p.profile, p.replicas]),
          ),
        ),
      );
    }
    out.push(...podLines(s));
    if (Array.isArray(s.reasons) && s.reasons.length) {
      out.push('', 'Waiting:');
      for (const r of s.reasons) out.push(`  ${r.replicas ?? '?'} replica(s) ${r.reason}: ${r.message}`);
    }
    // Kept until those replicas run again, beside what they wait for now (Waiting above).
    if (Array.isArray(s.takenBack) && s.takenBack.length) {
      out.push('', 'Taken back:');
      for (const t of s.takenBack) {
        // Without `by` what took them is another scope's, which the caller may not see: the message says so.
        const by = t.by ? `${t.by.class} model ${t.by.model} of ${t.by.scope}` : 'another scope';
        out.push(`  ${t.replicas ?? '?'} replica(s) ${t.reason} at ${t.at} by ${by}`);
      }
    }
    return out.join('\n');
  },
};

/** READY as kubectl shows it: one container per pod (the model server). */
const readyText = (p: Item) => (p.ready ? '1/1' : '0/1');
/** A pod that serves shows its phase; one that does not, why (Unschedulable, CrashLoopBackOff, ...). */
const podStatus = (p: Item) => (p.ready ? p.phase : (p.reason ?? p.phase));

/**
 * A model's pods in describe, from its status (where llmcap runs them): where each runs, and why those that do
 * not serve do not, in the pod's own words, with when the reconciler last looked.
 */
function podLines(s: Item): string[] {
  if (s.running === undefined) return [];
  const pods: Item[] = Array.isArray(s.pods) ? s.pods : [];
  const seen = age(s.observedAt);
  const head = `Pods (${s.running} running of ${s.admitted ?? 0} admitted${seen ? `; observed ${seen} ago` : '; not observed yet'}):`;
  if (!pods.length) return ['', head, '  none'];
  const out = [
    '',
    head,
    indent(
      table(
        ['NAME', 'NODE', 'COMPUTE', 'PROFILE', 'READY', 'STATUS', 'RESTARTS', 'AGE'],
        pods.map((p) => [
          p.name,
          p.node ?? '<none>',
          p.compute,
          p.profile,
          readyText(p),
          podStatus(p),
          p.restarts,
          age(p.createdAt),
        ]),
      ),
    ),
  ];
  if (Array.isArray(s.podReasons) && s.podReasons.length) {
    out.push('', 'Not ready:');
    for (const r of s.podReasons) out.push(`  ${r.replicas ?? '?'} pod(s) ${r.reason}: ${r.message}`);
  }
  return out;
}

/** Pods are read across models from GET /v1/pods (what the reconciler last observed); no item route. */
const pod: Kind = {
  name: 'pod',
  plural: 'pods',
  aliases: ['po'],
  path: '/v1/pods',
  listOnly: true,
  deletable: false,
  columns: (wide) => [
    'NAME',
    'MODEL',
    'COMPUTE',
    'NODE',
    'READY',
    'STATUS',
    'RESTARTS',
    'AGE',
    ...(wide ? ['NAMESPACE', 'PROFILE', 'OBSERVED', 'MESSAGE'] : []),
  ],
  row: (p, wide) => [
    p.name,
    p.model,
    p.compute,
    p.node ?? '<none>',
    readyText(p),
    podStatus(p),
    p.restarts,
    age(p.createdAt),
    ...(wide ? [p.namespace, p.profile, agoText(p.observedAt), p.message] : []),
  ],
};

const agoText = (iso: unknown) => {
  const a = age(iso);
  return a ? `${a} ago` : undefined;
};

/** Members arrive as `[{principal, role}]` or `{principal: role}`; either way, as rows. */
export function membersOf(scope: Item): { principal: string; role: string }[] {
  const raw = scope?.spec?.members ?? scope?.status?.members ?? scope?.members;
  if (Array.isArray(raw)) {
    return raw.map((m: Item) => ({ principal: String(m.principal ?? m.name ?? ''), role: String(m.role) }));
  }
  if (raw && typeof raw === 'object') {
    return Object.entries(raw).map(([principal, role]) => ({
      principal,
      role: String(typeof role === 'object' && role ? ((role as Item).role ?? '') : role),
    }));
  }
  return [];
}

const parentOf = (s: Item): string | undefined => s?.spec?.parent ?? s?.parent ?? s?.metadata?.parent;

const scope: Kind = {
  name: 'scope',
  plural: 'scopes',
  aliases: ['sc'],
  manifestKind: 'Scope',
  path: '/v1/scopes',
  deletable: true,
  columns: () => ['NAME', 'PARENT', 'MEMBERS', 'AGE'],
  row: (s) => [nameOf(s), parentOf(s), membersOf(s).length, age(s.metadata?.createdAt ?? s.createdAt)],
  async describe(s, client) {
    const name = nameOf(s);
    const members = membersOf(s);
    const out = [
      fields([
        ['Name', name],
        ['Parent', parentOf(s) ?? '(top)'],
        // Where its models run: their Services are <model>.<namespace>.svc.
        ['Namespace', s.status?.namespace],
      ]),
    ];
    out.push(
      '',
      members.length
        ? `Members:\n${indent(
            table(
              ['PRINCIPAL', 'ROLE'],
              members.map((m) => [m.principal, m.role]),
            ),
          )}`
        : 'Members: none (roles are inherited from the scopes above)',
    );
    const q = await client.find(`/v1/quotas/${seg(name)}`).catch(() => undefined);
    out.push(
      '',
      q ? `Quota:\n${indent(quotaLines(q))}` : 'Quota: none (guarantee is the sum of its children)',
    );
    return out.join('\n');
  },
};

export function quotaParts(q: Item): { guarantee?: Amounts; limit?: Amounts } {
  const s = specOf(q);
  return { guarantee: s.guarantee, limit: s.limit };
}

function quotaLines(q: Item): string {
  const { guarantee, limit } = quotaParts(q);
  return fields([
    ['Guarantee', amounts(guarantee, 'none')],
    ['Limit', amounts(limit, 'none (unlimited)')],
  ]);
}

const quota: Kind = {
  name: 'quota',
  plural: 'quotas',
  aliases: ['q'],
  manifestKind: 'Quota',
  path: '/v1/quotas',
  deletable: true,
  columns: () => ['SCOPE', 'GUARANTEE', 'LIMIT'],
  row: (q) => {
    const { guarantee, limit } = quotaParts(q);
    return [nameOf(q), amounts(guarantee), amounts(limit, 'unlimited')];
  },
  async describe(q, client) {
    const name = nameOf(q);
    const out = [fields([['Scope', name]]), quotaLines(q)];
    const cap = await client.find(`/v1/capacity/${seg(name)}`).catch(() => undefined);
    const row = cap ? capacityItems(cap).find((c) => c.scope === name) : undefined;
    if (row) {
      out.push(
        fields([
          ['Usage', amounts(row.usage, 'none')],
          ['Borrowed', amounts(row.borrowed, 'none')],
          ['At limit', row.atLimit ? 'yes' : 'no'],
        ]),
      );
    }
    return out.join('\n');
  },
};

const source: Kind = {
  name: 'source',
  plural: 'sources',
  aliases: [],
  path: '/v1/sources',
  listOnly: true,
  deletable: false,
  columns: () => ['SOURCE', 'MODELS'],
  row: (s) => [s.source, (s.models ?? []).join(',')],
};

export const KINDS: Kind[] = [compute, model, scope, quota, source, pod];

export function kindNamed(word: string): Kind {
  const w = word.toLowerCase();
  const k = KINDS.find((k) => k.name === w || k.plural === w || k.aliases.includes(w));
  if (!k) {
    throw new UsageError(
      `unknown kind ${word}; one of ${KINDS.map((k) => k.plural).join(', ')} (or their singulars)`,
    );
  }
  return k;
}

/**
 * A compute's or model's path says whose, when `owner` is given: a caller who sees two of a name (a platform
 * admin) says which with ?owner= (docs/security.md "What names tell").
 */
export function itemPath(kind: Kind, name: string, owner?: string, sub = ''): string {
  const whose =
    owner && (kind.name === 'compute' || kind.name === 'model') ? `?owner=${encodeURIComponent(owner)}` : '';
  return `${kind.path}/${seg(name)}${sub}${whose}`;
}

/**
 * A resource's recent events under its describe text, as kubectl shows them: the last time each was seen, how
 * often, what decided (api or reconcile) and what happened.
 */
export function eventLines(items: Item[]): string {
  if (!items.length) return 'Events:  <none>';
  const seen = (e: Item) => {
    const last = age(e.lastAt) ?? '-';
    return e.count > 1 ? `${last} (x${e.count} over ${age(e.firstAt) ?? '-'})` : last;
  };
  return `Events:
${indent(
  table(
    ['TYPE', 'REASON', 'AGE', 'FROM', 'MESSAGE'],
    items.map((e) => [e.type, e.reason, seen(e), e.source, e.message]),
  ),
)}`;
}

/** A list answer is `{items}`; accept a bare array too. */
export function itemsOf(body: unknown): Item[] {
  if (Array.isArray(body)) return body;
  const b = body as Item | undefined;
  if (Array.isArray(b?.items)) return b.items;
  return [];
}

function versionLine(m: Item): string | undefined {
  if (m.version === undefined) return undefined;
  const by = m.updatedBy ? ` by ${m.updatedBy}` : '';
  const when = age(m.updatedAt);
  return `${m.version}${when ? ` (changed ${when} ago${by})` : ''}`;
}

function yamlish(o: Item): string {
  return Object.entries(o)
    .map(([k, v]) => `${k}: ${typeof v === 'object' ? JSON.stringify(v) : v}`)
    .join('\n');
}

export interface CapacityRow {
  scope: string;
  parent?: string;
  guarantee: Amounts;
  limit: Amounts;
  usage: Amounts;
  borrowed: Amounts;
  atLimit: boolean;
  /** Pending replicas by reason. */
  pending: Record<string, number>;
  /** Pending replicas with their reasons in words, when the API gives them per scope. */
  waiting: { model?: string; reason: string; message?: string; replicas?: number }[];
}

/**
 * GET /v1/capacity rows, read defensively (the shape is not fixed yet): `items` or `scopes`, each with
 * guarantee, limit, usage, borrowed, atLimit (or capacityAtLimit) and pending as a map of reason → replicas
 * or as a list of `{reason, replicas, message?, model?}`.
 */
export function capacityItems(body: unknown): CapacityRow[] {
  const b = body as Item | undefined;
  const raw: Item[] = Array.isArray(b)
    ? b
    : Array.isArray(b?.items)
      ? b.items
      : Array.isArray(b?.scopes)
        ? b.scopes
        : b?.scope
          ? [b]
          : [];
  return raw.map((r) => {
    const pending: Record<string, number> = {};
    const waiting: CapacityRow['waiting'] = [];
    const p = r.pending ?? r.pendingByReason;
    if (Array.isArray(p)) {
      for (const x of p) {
        pending[x.reason] = (pending[x.reason] ?? 0) + (Number(x.replicas) || 1);
        waiting.push({ model: x.model, reason: x.reason, message: x.message, replicas: x.replicas });
      }
    } else if (p && typeof p === 'object') {
      for (const [k, v] of Object.entries(p)) if (Number(v) > 0) pending[k] = Number(v);
    }
    return {
      scope: String(r.scope ?? r.name ?? r.metadata?.name ?? ''),
      parent: r.parent,
      guarantee: r.guarantee ?? {},
      limit: r.limit ?? {},
      usage: r.usage ?? {},
      borrowed: r.borrowed ?? {},
      atLimit: Boolean(r.capacityAtLimit ?? r.atLimit),
      pending,
      waiting,
    };
  });
}
