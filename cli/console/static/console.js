// The llmcap console: plain DOM, no framework. Every figure comes from the API through the console's proxy
// (/api/v1/...), which calls it with the caller's own credentials; names are set as text, never as HTML.

const RES = { gpus: 'GPUs', cores: 'cores', memoryGb: 'memory (GiB)' };
const PALETTE = ['#3b6fd8', '#f0a028', '#2e8b57', '#8e44ad', '#c8372d', '#16a2b8', '#d35400', '#5d6d7e'];

function h(tag, attrs, ...children) {
  const el = document.createElementNS(
    ['svg', 'rect', 'text', 'line', 'g'].includes(tag)
      ? 'http://www.w3.org/2000/svg'
      : 'http://www.w3.org/1999/xhtml',
    tag,
  );
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'style' && typeof v === 'object') Object.assign(el.style, v);
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, String(v));
  }
  for (const c of children.flat())
    if (c !== undefined && c !== null && c !== false) el.append(c instanceof Node ? c : String(c));
  return el;
}

class ApiProblem extends Error {
  constructor(status, body) {
    super((body && (body.detail || body.title)) || `HTTP ${status}`);
    this.status = status;
  }
}

async function api(path) {
  const r = await fetch(`/api${path}`, { headers: { accept: 'application/json' } });
  const text = await r.text();
  const body = text ? JSON.parse(text) : undefined;
  if (!r.ok) throw new ApiProblem(r.status, body);
  return body;
}

// A list comes a page at a time (?limit, ?continue; metadata.continue while more follow): every page is read,
// and the pages' items come back as one list, with the first page's other fields (skipped, observedAt).
// ?chunk-size=N in the console's own address asks for smaller pages, as the CLI's --chunk-size does.
const PAGE = Number(new URLSearchParams(location.search).get('chunk-size')) || 500;
async function apiList(path) {
  const sep = path.includes('?') ? '&' : '?';
  const first = await api(`${path}${sep}limit=${PAGE}`);
  const { metadata, ...body } = first || {};
  const items = [...(body.items || [])];
  let token = metadata?.continue;
  while (token) {
    const next = await api(`${path}${sep}limit=${PAGE}&continue=${encodeURIComponent(token)}`);
    items.push(...(next.items || []));
    token = next.metadata?.continue;
  }
  return { ...body, items };
}

const num = (x) => (x === undefined || x === null ? '–' : String(Math.round(x * 1000) / 1000));
const money = (x) => (x === undefined || x === null ? '–' : `$${x < 10 ? x.toFixed(4) : x.toFixed(2)}`);
const when = (iso) => (iso ? new Date(iso).toISOString().replace('T', ' ').slice(0, 19) : '–');
const state = (s) => h('span', { class: `state ${s}` }, s);
const table = (headers, rows, attrs) =>
  h(
    'table',
    attrs,
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        headers.map((x) =>
          h(
            'th',
            {
              class:
                /^(#|[A-Z ]*(NODES|PER|COST|IDLE|REPLICAS|SHORT|NEEDED|DESIRED|READY|ADMITTED|PENDING|BORROWED))/i.test(
                  x,
                )
                  ? 'num'
                  : undefined,
            },
            x,
          ),
        ),
      ),
    ),
    h('tbody', {}, rows),
  );
const td = (v, field, cls) => h('td', { 'data-field': field, class: cls }, v);
const tdn = (v, field) => td(v, field, 'num');
const problemBox = (e) => h('div', { class: 'error', 'data-problem': e.status || '' }, e.message);

// ---- Capacity -------------------------------------------------------------------------------------------

function treeOrder(scopes) {
  const names = new Set(scopes.map((s) => s.scope));
  const kids = new Map();
  for (const s of scopes) {
    const p = s.parent && names.has(s.parent) ? s.parent : '';
    kids.set(p, [...(kids.get(p) || []), s]);
  }
  const out = [];
  const walk = (p, d) => {
    for (const s of (kids.get(p) || []).sort((a, b) => a.scope.localeCompare(b.scope))) {
      out.push({ ...s, depth: d });
      walk(s.scope, d + 1);
    }
  };
  walk('', 0);
  return out;
}

function capacityBar(s, r) {
  const held = s.usage[r] || 0;
  const g = s.guarantee[r] || 0;
  const l = s.limit[r];
  const top = Math.max(held, g, l || 0, 1) * 1.1;
  const pct = (x) => `${(100 * x) / top}%`;
  const within = Math.min(held, g);
  const over = Math.max(0, held - g);
  return h(
    'div',
    { class: 'bar', title: `held ${held}, guarantee ${g}, limit ${l === undefined ? 'none' : l}` },
    h('div', { class: 'held', style: { width: pct(within) } }),
    over > 0 ? h('div', { class: 'borrowed', style: { left: pct(within), width: pct(over) } }) : null,
    h('div', { class: 'mark guarantee', style: { left: pct(g) } }),
    l !== undefined ? h('div', { class: 'mark limit', style: { left: pct(l) } }) : null,
  );
}

let resource = 'gpus';
async function capacityPage() {
  const c = await api('/v1/capacity');
  const rows = treeOrder(c.scopes || []);
  const pick = (r) =>
    h(
      'button',
      {
        type: 'button',
        class: r === resource ? 'on' : undefined,
        onclick: () => {
          resource = r;
          render();
        },
      },
      RES[r],
    );
  return [
    h('h1', {}, 'Capacity per scope'),
    h(
      'p',
      { class: 'muted' },
      'Held replicas against each scope’s guarantee and limit, down the tenancy tree, and the replicas that wait.',
    ),
    h('div', { class: 'toolbar' }, 'Resource:', Object.keys(RES).map(pick)),
    h(
      'div',
      { class: 'legend' },
      h('span', {}, h('i', { style: { background: 'var(--held)' } }), 'held within guarantee'),
      h('span', {}, h('i', { style: { background: 'var(--borrowed)' } }), 'borrowed (held beyond guarantee)'),
      h('span', {}, h('i', { style: { background: 'var(--guarantee)' } }), 'guarantee'),
      h('span', {}, h('i', { style: { background: 'var(--limit)' } }), 'limit'),
    ),
    rows.length === 0
      ? h('p', {}, 'No scope you can read.')
      : table(
          ['Scope', RES[resource], 'Held', 'Guarantee', 'Limit', 'Borrowed', 'Pending by reason'],
          rows.map((s) =>
            h(
              'tr',
              { 'data-scope': s.scope },
              td(h('span', { style: { paddingLeft: `${s.depth * 18}px` } }, s.scope), 'scope'),
              td(capacityBar(s, resource), 'bar'),
              tdn(num(s.usage[resource] || 0), 'held'),
              tdn(num(s.guarantee[resource] || 0), 'guarantee'),
              tdn(s.limit[resource] === undefined ? 'none' : num(s.limit[resource]), 'limit'),
              tdn(num(s.borrowed[resource] || 0), 'borrowed'),
              td(
                Object.entries(s.pending || {})
                  .filter(([, n]) => n > 0)
                  .map(([why, n]) => h('span', { class: 'chip warn', 'data-reason': why }, `${n} ${why}`)),
                'pending',
              ),
            ),
          ),
          { id: 'capacity' },
        ),
  ];
}

// ---- Computes -------------------------------------------------------------------------------------------

async function computesPage() {
  const items = (await apiList('/v1/computes')).items;
  return [
    h('h1', {}, 'Computes and their node groups'),
    h(
      'p',
      { class: 'muted' },
      'One EKS managed node group per compute: nodes needed by placement, desired in the group, ready; short is needed but not ready.',
    ),
    table(
      [
        'Compute',
        'Owner',
        'Instance',
        'Node group',
        'Needed',
        'Desired',
        'Ready',
        'Short',
        'Cost per hour',
        'Message',
      ],
      items.map((c) => {
        const s = c.status || {};
        const needed = s.neededNodes || 0;
        const short = Math.max(0, needed - (s.readyNodes || 0));
        const perHour = (s.desiredNodes || 0) * (s.cost?.perHour || c.spec.cost.perHour || 0);
        return h(
          'tr',
          { 'data-compute': c.metadata.name },
          td(c.metadata.name, 'name'),
          td(c.metadata.owner || '(platform)', 'owner'),
          td(c.spec.node.instanceType, 'instance'),
          td(state(s.nodegroupStatus || 'ABSENT'), 'status'),
          tdn(needed, 'needed'),
          tdn(s.desiredNodes || 0, 'desired'),
          tdn(s.readyNodes || 0, 'ready'),
          tdn(short, 'short'),
          tdn(money(perHour), 'perHour'),
          td(s.statusMessage || '', 'message'),
        );
      }),
      { id: 'computes' },
    ),
  ];
}

// ---- Models ---------------------------------------------------------------------------------------------

async function modelsPage() {
  const [models, pods] = await Promise.all([
    apiList('/v1/models'),
    apiList('/v1/pods').catch(() => ({ items: [] })),
  ]);
  const podsOf = new Map();
  for (const p of pods.items || []) podsOf.set(p.model, [...(podsOf.get(p.model) || []), p]);
  return [
    h('h1', {}, 'Models'),
    h(
      'p',
      { class: 'muted' },
      'Where each model’s replicas are placed, why others wait, what was taken back, and its pods.',
    ),
    (models.items || []).map((m) => {
      const s = m.status || {};
      const mine = podsOf.get(m.metadata.name) || [];
      return h(
        'section',
        { class: 'card', 'data-model': m.metadata.name },
        h(
          'h2',
          {},
          m.metadata.name,
          ' ',
          h('span', { class: 'muted' }, m.metadata.owner || 'shared', ' · ', s.effectiveClass || ''),
        ),
        h(
          'div',
          { class: 'figures' },
          h('div', {}, h('b', { 'data-field': 'target' }, num(s.targetReplicas)), 'target'),
          h('div', {}, h('b', { 'data-field': 'admitted' }, num(s.admitted || 0)), 'admitted'),
          h('div', {}, h('b', { 'data-field': 'borrowed' }, num(s.borrowed || 0)), 'borrowed'),
          h('div', {}, h('b', { 'data-field': 'pending' }, num(s.pending || 0)), 'pending'),
        ),
        (s.placements || []).length
          ? table(
              ['Compute', 'Profile', 'Replicas'],
              s.placements.map((p) =>
                h(
                  'tr',
                  { 'data-placement': p.compute },
                  td(p.compute, 'compute'),
                  td(p.profile, 'profile'),
                  tdn(p.replicas, 'replicas'),
                ),
              ),
            )
          : h('p', { class: 'muted' }, 'No replica placed.'),
        (s.reasons || []).length
          ? h(
              'div',
              {},
              h('h2', {}, 'Waiting'),
              s.reasons.map((r) =>
                h(
                  'p',
                  { 'data-reason': r.reason },
                  h('span', { class: 'chip warn' }, `${r.replicas} ${r.reason}`),
                  r.message,
                ),
              ),
            )
          : null,
        (s.takenBack || []).length
          ? h(
              'div',
              {},
              h('h2', {}, 'Taken back'),
              s.takenBack.map((t) =>
                h(
                  'p',
                  { 'data-taken-back': t.by.model },
                  h('span', { class: 'chip' }, `${t.replicas} ${t.reason}`),
                  `by ${t.by.model} (${t.by.scope}) at ${when(t.at)}: ${t.message}`,
                ),
              ),
            )
          : null,
        mine.length
          ? h(
              'div',
              {},
              h('h2', {}, 'Pods'),
              table(
                ['Pod', 'Node', 'Phase', 'Ready'],
                mine.map((p) =>
                  h(
                    'tr',
                    { 'data-pod': p.name },
                    td(p.name, 'name'),
                    td(p.node || '–', 'node'),
                    td(p.phase || '–', 'phase'),
                    td(state(String(!!p.ready)), 'ready'),
                  ),
                ),
              ),
            )
          : null,
      );
    }),
  ];
}

// ---- Alarms and passes ----------------------------------------------------------------------------------

async function alarmsPage() {
  const items = (await apiList('/v1/alarms')).items;
  return [
    h('h1', {}, 'Alarms'),
    h(
      'p',
      { class: 'muted' },
      'The stage’s CloudWatch alarms you may see, as CloudWatch last evaluated them.',
    ),
    items.length === 0
      ? h('p', {}, 'No alarm you may see.')
      : table(
          ['Alarm', 'Kind', 'About', 'State', 'Since', 'Reason'],
          items.map((a) =>
            h(
              'tr',
              { 'data-alarm': a.name },
              td(a.name, 'name'),
              td(a.kind, 'kind'),
              td(a.subject, 'subject'),
              td(state(a.state), 'state'),
              td(when(a.updatedAt), 'since'),
              td(a.reason || '', 'reason'),
            ),
          ),
          { id: 'alarms' },
        ),
  ];
}

async function passesPage() {
  const items = (await api('/v1/reconcile?limit=20')).items || [];
  return [
    h('h1', {}, 'Recent reconcile passes'),
    table(
      ['Pass', 'Trigger', 'State', 'Started', 'Took (ms)', 'Admitted', 'Pending', 'Workflows', 'Errors'],
      items.map((p) => {
        const d = p.digest || {};
        return h(
          'tr',
          { 'data-pass': p.id },
          td(p.id, 'id'),
          td(p.trigger, 'trigger'),
          td(state(p.state), 'state'),
          td(when(p.startedAt), 'started'),
          tdn(p.durationMs === undefined ? '–' : p.durationMs, 'duration'),
          tdn(num(d.admitted), 'admitted'),
          tdn(num(d.pendingReplicas), 'pending'),
          tdn(num(d.workflows), 'workflows'),
          tdn(num(d.errors), 'errors'),
        );
      }),
      { id: 'passes' },
    ),
  ];
}

// ---- Costs ----------------------------------------------------------------------------------------------

let period = 24;
function costChart(body, colour) {
  const W = 900,
    H = 240,
    L = 60,
    B = 24,
    T = 10;
  const keys = [...body.scopes.map((s) => s.scope), 'idle'];
  const stacks = body.series.map((b) => keys.map((k) => (k === 'idle' ? b.idle : b.scopes[k] || 0)));
  const max = Math.max(1e-9, ...stacks.map((s) => s.reduce((a, x) => a + x, 0)));
  const bw = (W - L) / Math.max(1, stacks.length);
  const y = (v) => ((H - B - T) * v) / max;
  const svg = h('svg', {
    viewBox: `0 0 ${W} ${H}`,
    width: '100%',
    role: 'img',
    'aria-label': 'cost per slice of the period, by scope',
  });
  for (let i = 0; i <= 4; i++) {
    const v = (max * i) / 4;
    const yy = H - B - y(v);
    svg.append(
      h('line', { x1: L, x2: W, y1: yy, y2: yy, stroke: '#e3e6ec' }),
      h('text', { x: L - 6, y: yy + 4, 'text-anchor': 'end' }, money(v)),
    );
  }
  stacks.forEach((s, i) => {
    let acc = 0;
    s.forEach((v, k) => {
      if (v <= 0) return;
      const hgt = y(v);
      svg.append(
        h(
          'rect',
          {
            x: L + i * bw + 1,
            y: H - B - y(acc) - hgt,
            width: Math.max(1, bw - 2),
            height: hgt,
            fill: colour(keys[k]),
          },
          h('title', {}, `${keys[k]}: ${money(v)}`),
        ),
      );
      acc += v;
    });
    if (i % Math.ceil(stacks.length / 6) === 0)
      svg.append(h('text', { x: L + i * bw, y: H - 6 }, when(body.series[i].from).slice(5, 16)));
  });
  return h('div', { class: 'chart' }, svg);
}

async function costsPage() {
  const to = new Date();
  const from = new Date(to.getTime() - period * 3600_000);
  const body = await api(`/v1/costs?from=${from.toISOString()}&to=${to.toISOString()}&buckets=24`);
  const colourOf = new Map(body.scopes.map((s, i) => [s.scope, PALETTE[i % PALETTE.length]]));
  const colour = (k) => (k === 'idle' ? 'var(--idle)' : colourOf.get(k));
  const pick = (hours, label) =>
    h(
      'button',
      {
        type: 'button',
        class: hours === period ? 'on' : undefined,
        onclick: () => {
          period = hours;
          render();
        },
      },
      label,
    );
  return [
    h('h1', {}, 'Costs'),
    h(
      'p',
      { class: 'muted' },
      'A node’s price is shared by the replicas on it in proportion to their dominant resource share; what no replica uses is its compute’s idle cost. ',
      `${body.samples} samples, ${body.currency}.`,
    ),
    h(
      'div',
      { class: 'toolbar' },
      'Period:',
      pick(1, 'last hour'),
      pick(24, 'last 24 hours'),
      pick(24 * 7, 'last 7 days'),
    ),
    costChart(body, colour),
    h(
      'div',
      { class: 'legend' },
      [...body.scopes.map((s) => s.scope), 'idle'].map((k) =>
        h('span', {}, h('i', { style: { background: colour(k) } }), k),
      ),
    ),
    h('h2', {}, 'Per scope'),
    table(
      ['Scope', 'Per hour now', 'In the period'],
      body.scopes.map((s) =>
        h(
          'tr',
          { 'data-scope': s.scope },
          td(s.scope, 'scope'),
          tdn(money(s.perHour), 'perHour'),
          tdn(money(s.cost), 'cost'),
        ),
      ),
      { id: 'cost-scopes' },
    ),
    h('h2', {}, 'Per compute'),
    table(
      ['Compute', 'Owner', 'Nodes', 'Per hour now', 'Idle per hour', 'In the period', 'Idle in the period'],
      body.computes.map((c) =>
        h(
          'tr',
          { 'data-compute': c.compute },
          td(c.compute, 'compute'),
          td(c.owner || '(platform)', 'owner'),
          tdn(c.nodes, 'nodes'),
          tdn(money(c.perHour), 'perHour'),
          tdn(money(c.idlePerHour), 'idlePerHour'),
          tdn(money(c.cost), 'cost'),
          tdn(money(c.idle), 'idle'),
        ),
      ),
      { id: 'cost-computes' },
    ),
    body.total
      ? h(
          'p',
          { 'data-field': 'total' },
          `Total: ${money(body.total.perHour)} per hour now, ${money(body.total.cost)} in the period.`,
        )
      : null,
  ];
}

// ---- Routing --------------------------------------------------------------------------------------------

const PAGES = {
  capacity: capacityPage,
  computes: computesPage,
  models: modelsPage,
  alarms: alarmsPage,
  passes: passesPage,
  costs: costsPage,
};

async function render() {
  const name = PAGES[location.hash.slice(1)] ? location.hash.slice(1) : 'capacity';
  for (const a of document.querySelectorAll('nav a'))
    a.classList.toggle('active', a.getAttribute('href') === `#${name}`);
  const main = document.getElementById('page');
  main.setAttribute('data-page', name);
  main.removeAttribute('data-ready');
  let content;
  try {
    content = await PAGES[name]();
  } catch (e) {
    content = [h('h1', {}, name[0].toUpperCase() + name.slice(1)), problemBox(e)];
  }
  main.replaceChildren(...[content].flat(2).filter(Boolean));
  main.setAttribute('data-ready', name);
}

window.addEventListener('hashchange', render);
document.getElementById('refresh').addEventListener('click', render);
render();
