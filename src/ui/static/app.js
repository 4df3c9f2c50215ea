// Tessera's topology dashboard: polls this node's status endpoints every second and draws HA
// inside the cluster and both kinds of replication. Plain DOM APIs only: every value from the node
// (ids, addresses, error texts) goes in as textContent, never as markup. A token, when given, stays
// in sessionStorage (this tab) and is sent only to this node, for what the open status endpoints
// do not show (every node of the HA cluster, paths filters, the event history).
'use strict';

const POLL_MS = 1000;
const SLOW_POLL_MS = 5000;
const HISTORY = 60;
const KINDS = ['dr', 'performance'];
const TOKEN_KEY = 'tessera.dashboard.token';

const state = {
  token: (typeof sessionStorage !== 'undefined' && sessionStorage.getItem(TOKEN_KEY)) || '',
  // `${kind}/${id}` -> [{ t, entries, ms }], the last HISTORY samples.
  lag: new Map(),
  filters: new Map(),
  events: undefined,
  slowAt: 0,
};

// ---- DOM helpers ----

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') e.className = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) {
    if (c === undefined || c === null) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function fact(label, value, cls) {
  const v = value === undefined || value === '' ? '–' : value;
  return el('span', { class: cls || '' }, el('b', {}, label), v instanceof Node ? v : el('span', { class: 'v' }, v));
}

const SVG = 'http://www.w3.org/2000/svg';

/** A sparkline of lag: entries (blue) and ms (orange), each scaled to its own maximum. */
function sparkline(samples, title) {
  const w = 120;
  const h = 28;
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('class', 'sparkline');
  svg.setAttribute('viewBox', `0 0 ${w} ${h}`);
  svg.setAttribute('preserveAspectRatio', 'none');
  const t = document.createElementNS(SVG, 'title');
  t.textContent = title;
  svg.append(t);
  for (const [key, cls] of [['entries', 'entries'], ['ms', 'ms']]) {
    const max = Math.max(1, ...samples.map((s) => s[key]));
    const pts = samples.map((s, i) => `${((i / Math.max(1, samples.length - 1)) * w).toFixed(1)},${(h - 1 - (s[key] / max) * (h - 2)).toFixed(1)}`);
    const line = document.createElementNS(SVG, 'polyline');
    line.setAttribute('class', cls);
    line.setAttribute('points', pts.join(' '));
    svg.append(line);
  }
  return svg;
}

function duration(seconds) {
  if (!Number.isFinite(seconds)) return '∞';
  if (seconds < 120) return `${Math.round(seconds)} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  if (seconds < 172800) return `${(seconds / 3600).toFixed(1)} h`;
  return `${(seconds / 86400).toFixed(1)} d`;
}

/** An ETA from status (null: unknown, or the gap is not closing). */
function eta(seconds) {
  return seconds === null || seconds === undefined ? 'ETA unknown' : `ETA ${duration(seconds)}`;
}

function age(rfc3339, now) {
  if (!rfc3339) return 'never';
  const ms = now - Date.parse(rfc3339);
  return Number.isFinite(ms) ? `${(Math.max(0, ms) / 1000).toFixed(1)} s ago` : rfc3339;
}

// ---- fetching ----

async function get(path, withToken) {
  const headers = {};
  if (withToken && state.token) headers['X-Vault-Token'] = state.token;
  try {
    const r = await fetch(`/v1/${path}`, { headers, cache: 'no-store' });
    let body;
    try {
      body = await r.json();
    } catch {
      body = undefined;
    }
    return { status: r.status, body };
  } catch (e) {
    return { status: 0, body: undefined, error: String(e) };
  }
}

function remember(map, key, sample) {
  const list = map.get(key) || [];
  list.push(sample);
  while (list.length > HISTORY) list.shift();
  map.set(key, list);
  return list;
}

/**
 * WAL headroom of one secondary, as the primary computes it (src/replication/progress.ts): how
 * many more writes the primary can take before the entry after the secondary's last applied one
 * leaves the retained WAL (then only a Merkle sync brings it back), and that as time at the
 * primary's recent write rate (null seconds: nothing is being written).
 */
function headroom(sec) {
  if (sec.wal_headroom_entries === undefined) return undefined;
  const seconds = sec.wal_headroom_seconds;
  return { entries: sec.wal_headroom_entries, seconds: seconds === null || seconds === undefined ? Infinity : seconds };
}

// ---- rendering ----

function renderPrimary(kind, st, now) {
  const lastWal = Number(st.last_dr_wal ?? st.last_performance_wal ?? st.last_wal ?? 0);
  const rate = Number(st.write_rate_entries_per_sec ?? 0);
  const box = el('div');
  box.append(el('div', { class: 'facts' },
    fact('cluster', st.cluster_id, 'mono'),
    fact('cluster address', st.primary_cluster_addr, 'mono'),
    fact('last WAL', lastWal),
    fact('write rate', `${rate.toFixed(1)} entries/s`, 'write-rate'),
    fact('WAL retained from', st.wal_first_retained),
    fact('WAL bound', st.wal_max_entries === undefined ? undefined : `${st.wal_max_entries} entries / ${Math.round(st.wal_max_bytes / 1048576)} MiB`),
  ));
  const secondaries = st.secondaries || [];
  if (secondaries.length === 0) {
    box.append(el('p', { class: 'muted' }, 'No secondaries connected yet. Known: ', (st.known_secondaries || []).join(', ') || 'none'));
    return box;
  }
  const head = ['secondary', 'state', 'connection', 'API address (reported)', 'connected from', 'last heartbeat', 'applied WAL', 'lag', 'lag history', 'WAL headroom'];
  if (kind === 'performance') head.push('paths filter');
  const table = el('table', { class: 'secondaries' }, el('thead', {}, el('tr', {}, ...head.map((h) => el('th', {}, h)))));
  const body = el('tbody');
  for (const sec of secondaries) {
    const id = sec.node_id;
    const lagMs = Number(sec.lag_ms);
    const samples = remember(state.lag, `${kind}/${id}`, { t: now, entries: sec.lag_entries, ms: lagMs });
    const room = headroom(sec);
    const tr = el('tr', { 'data-secondary-id': id },
      el('td', { class: 'secondary-id mono' }, id),
      el('td', { class: 'state' }, sec.state),
      el('td', { class: `connection conn-${sec.connection_status}` }, sec.connection_status),
      // What the secondary says (a claim), then what the primary saw (its connection's peer address).
      el('td', { class: 'mono reported' }, sec.reported_api_address || sec.api_address),
      el('td', { class: 'mono observed' }, sec.cluster_address),
      el('td', {}, age(sec.last_heartbeat, now)),
      el('td', {}, sec.last_applied_wal),
      el('td', { class: 'lag' }, `${sec.lag_entries} entries, ${lagMs} ms`),
      el('td', {}, sparkline(samples, `lag of ${id}: last ${samples.length} samples`)),
      el('td', { class: `headroom ${room && room.seconds < 600 ? 'bad' : ''}` },
        room === undefined ? '–' : `${room.entries} entries (${duration(room.seconds)})`),
    );
    if (kind === 'performance') tr.append(el('td', { class: 'filter' }, filterText(id)));
    body.append(tr);
  }
  table.append(body);
  box.append(table);
  if (st.demote_drain) box.append(el('p', { class: 'warn' }, `Demote draining to WAL ${st.demote_drain.last_wal}; pending: `,
    (st.demote_drain.pending || []).map((p) => `${p.id} at ${p.last_applied_wal}`).join(', ') || 'none'));
  return box;
}

function filterText(id) {
  if (!state.token) return 'token needed';
  const f = state.filters.get(id);
  if (f === undefined) return '…';
  if (f === null) return 'none (all paths)';
  if (typeof f === 'string') return f;
  return `${f.mode}: ${(f.paths || []).join(', ')}`;
}

function renderSecondary(kind, st, now) {
  const lagMs = Number(st.lag_ms);
  const samples = remember(state.lag, `${kind}/self`, { t: now, entries: st.lag_entries, ms: lagMs });
  const primary = (st.primaries || [])[0] || {};
  const box = el('div', { class: 'secondary-view' });
  box.append(el('div', { class: 'facts' },
    fact('secondary id', st.secondary_id, 'mono secondary-id'),
    fact('cluster', st.cluster_id, 'mono'),
    fact('state', st.state, 'state'),
    fact('connection', st.connection_state, `connection conn-${st.connection_state}`),
  ));
  box.append(el('h3', {}, 'Follows primary'));
  box.append(el('div', { class: 'facts' },
    fact('API address', primary.api_address, 'mono'),
    fact('cluster address', primary.cluster_address || st.primary_cluster_addr, 'mono'),
    fact('heartbeat', `${primary.connection_status || 'unknown'}, ${age(primary.last_heartbeat, now)}`, `conn-${primary.connection_status}`),
    fact('known primaries', (st.known_primary_cluster_addrs || []).join(', '), 'mono'),
  ));
  box.append(el('h3', {}, 'Lag'));
  box.append(el('div', { class: 'facts' },
    fact('lag', `${st.lag_entries} entries, ${lagMs} ms`, 'lag'),
    fact('applied (primary index)', st.last_remote_wal),
    fact('primary last WAL', st.primary_last_wal),
    el('span', {}, sparkline(samples, `lag: last ${samples.length} samples`)),
  ));
  const sync = st.merkle_sync_progress;
  if (sync) {
    const p = el('progress', { max: String(Math.max(1, sync.sync_total_keys)), value: String(sync.sync_progress) });
    box.append(el('p', { class: 'merkle-sync' }, 'Merkle sync: ', p, ` ${sync.sync_progress} / ${sync.sync_total_keys} keys, ${eta(sync.eta_seconds)}`));
  }
  const cu = st.catch_up;
  if (cu) box.append(el('p', { class: 'catch-up' },
    `Catching up: ${cu.entries_behind} entries behind at ${Number(cu.rate_entries_per_sec || 0).toFixed(1)} entries/s, ${eta(cu.eta_seconds)}`));
  if (st.last_merkle_sync) box.append(el('p', { class: 'last-merkle-sync' },
    `Last Merkle sync: ${st.last_merkle_sync.fetched_keys} keys fetched, ${st.last_merkle_sync.deleted_keys} deleted`));
  if (st.verification_mismatch === true) box.append(el('p', { class: 'error verification-mismatch' },
    `Merkle root differs from the primary's at WAL ${st.verification_mismatch_wal ?? '?'}: repairing by a Merkle sync (repairs so far: ${st.verification_repairs ?? 0})`));
  if (st.last_verified_wal !== undefined) box.append(el('p', { class: 'verified' }, `Verified against the primary's Merkle root at WAL ${st.last_verified_wal} (${age(st.last_verified_at, now)})`));
  return box;
}

/**
 * A secondary keeps its last error after it recovers: while it streams, connected and not
 * mismatched, the error is shown as past (greyed, with its time), not as a current one.
 */
function lastError(st, now) {
  const healthy = st.mode === 'secondary' && st.connection_state === 'ready' && st.state === 'stream-wals' && st.verification_mismatch !== true;
  if (!healthy) return el('p', { class: 'error last-error' }, `last error: ${st.last_error}`);
  return el('p', { class: 'muted last-error past' }, `past error (${age(st.last_error_time, now)}; connected and streaming since): ${st.last_error}`);
}

function renderKind(kind, r, now) {
  const section = document.getElementById(`kind-${kind}`);
  const body = el('div', { class: 'body' });
  const st = r.body && r.body.data;
  if (!st) {
    body.append(el('p', { class: 'error' }, r.status === 0 ? `unreachable: ${r.error}` : `status ${r.status}: ${((r.body && r.body.errors) || []).join('; ')}`));
  } else {
    const role = st.mode === 'disabled' ? 'not enabled' : st.mode;
    section.setAttribute('data-mode', st.mode);
    body.append(el('p', {}, 'This node: ', el('span', { class: 'role' }, role), st.state ? ` (${st.state})` : ''));
    if (st.mode === 'primary') body.append(renderPrimary(kind, st, now));
    else if (st.mode === 'secondary' || st.mode === 'bootstrapping') body.append(renderSecondary(kind, st, now));
    if (st.reindex_in_progress === true) {
      const total = Math.max(1, Number(st.reindex_building_total || 0));
      body.append(el('p', { class: 'reindex' }, 'Reindex: ', el('progress', { max: String(total), value: String(st.reindex_building_progress || 0) }),
        ` ${st.reindex_building_progress || 0} / ${st.reindex_building_total || 0} keys, ${eta(st.reindex_eta_seconds)}`));
    }
    if (st.storage_failed) body.append(el('p', { class: 'error' }, `storage failed: ${st.storage_error || ''}`));
    if (st.last_error) body.append(lastError(st, now));
  }
  section.querySelector('.body').replaceWith(body);
}

function renderNode(health) {
  const box = document.getElementById('node');
  const h = health.body || {};
  box.replaceChildren(
    `${location.host} · `,
    health.status === 0 ? 'unreachable' : h.sealed ? 'sealed' : h.initialized === false ? 'not initialised' : 'unsealed',
    h.version ? ` · v${h.version}` : '',
    h.cluster_id ? ` · cluster ${h.cluster_id}` : '',
  );
}

function renderEvents() {
  const section = document.querySelector('#events .body');
  const body = el('div', { class: 'body' });
  const ev = state.events;
  if (!state.token) body.append(el('p', { class: 'muted' }, 'Give a token (sudo on sys/replication/events) to see recent events.'));
  else if (ev === undefined) body.append(el('p', { class: 'muted' }, 'loading…'));
  else if (typeof ev === 'string') body.append(el('p', { class: 'muted' }, ev));
  else if (ev.length === 0) body.append(el('p', { class: 'muted' }, 'No events yet.'));
  else {
    const list = el('ol', { reversed: '' });
    for (const e of ev.slice(-50).reverse()) {
      const { time, at, ts, type, event, ...rest } = e;
      list.append(el('li', {}, el('span', { class: 'mono' }, String(time || at || ts || '')), ' ', el('b', {}, String(type || event || '')), ' ', JSON.stringify(rest)));
    }
    body.append(list);
  }
  section.replaceWith(body);
}

/**
 * What the HA section shows, from sys/leader (open), whether the node is sealed (health), and
 * sys/ha-status (undefined without a token). Pure: test/integration/dashboard-ha.test.ts runs it
 * without a browser.
 *   { enabled: false, note }                      HA off, or sys/leader unanswered
 *   { enabled: true, mode, active, cluster, since, nodes, note }
 * `nodes` (sorted by API address, undefined without a token or on a refusal) each say `active`.
 */
function haView(leader, sealed, members) {
  // A sealed node with HA answers sys/leader 500 'Vault is sealed', as Vault: HA is enabled, sealed.
  const sealedHa = leader && leader.status === 500 && leader.body && Array.isArray(leader.body.errors) && leader.body.errors.includes('Vault is sealed');
  const l = sealedHa ? { ha_enabled: true, is_self: false } : leader && leader.body;
  if (!sealedHa && (!leader || leader.status !== 200 || !l)) {
    const why = !leader || leader.status === 0 ? `unreachable${leader && leader.error ? `: ${leader.error}` : ''}` : `status ${leader.status}`;
    return { enabled: false, note: `sys/leader: ${why}` };
  }
  if (l.ha_enabled !== true) return { enabled: false, note: 'HA is not enabled on this node: it is a cluster of one (storage "postgresql" with ha_enabled = "true" enables it).' };
  const mode = sealed || sealedHa ? 'sealed' : l.is_self === true ? 'active' : 'standby';
  const view = {
    enabled: true,
    mode,
    active: l.leader_address || '',
    cluster: l.leader_cluster_address || '',
    since: l.is_self === true ? l.active_time : undefined,
    nodes: undefined,
    note: undefined,
  };
  if (members === undefined) view.note = 'Give a token (read on sys/ha-status) to see every node of the cluster.';
  else if (members.status !== 200 || !members.body) {
    const errors = (members.body && members.body.errors) || [];
    view.note = members.status === 0 ? `sys/ha-status: unreachable: ${members.error}` : `sys/ha-status: status ${members.status}${errors.length ? `: ${errors.join('; ')}` : ''}`;
  } else {
    const list = members.body.nodes || (members.body.data && members.body.data.nodes) || [];
    view.nodes = list
      .map((n) => ({ host: n.hostname, api: n.api_address, cluster: n.cluster_address, active: n.active_node === true, version: n.version, lastEcho: n.last_echo }))
      .sort((a, b) => (a.api < b.api ? -1 : a.api > b.api ? 1 : 0));
  }
  return view;
}

function renderHa(view, now) {
  const section = document.getElementById('ha');
  const body = el('div', { class: 'body' });
  section.setAttribute('data-ha-mode', view.enabled ? view.mode : 'disabled');
  if (!view.enabled) {
    body.append(el('p', { class: 'muted ha-note' }, view.note));
    section.querySelector('.body').replaceWith(body);
    return;
  }
  body.append(el('p', {}, 'This node: ', el('span', { class: 'role ha-mode' }, view.mode)));
  body.append(el('div', { class: 'facts' },
    fact('active node', view.active || 'none known', 'mono ha-active'),
    fact('active cluster address', view.cluster, 'mono'),
    view.since ? fact('active since', view.since, 'mono') : undefined,
  ));
  if (view.nodes) {
    const head = ['host name', 'API address', 'cluster address', 'role', 'version', 'last echo'];
    const table = el('table', { class: 'ha-nodes' }, el('thead', {}, el('tr', {}, ...head.map((h) => el('th', {}, h)))));
    const tbody = el('tbody');
    for (const n of view.nodes) {
      tbody.append(el('tr', { 'data-api-address': n.api, class: n.active ? 'active-node' : '' },
        el('td', { class: 'mono' }, n.host),
        el('td', { class: 'mono api' }, n.api),
        el('td', { class: 'mono' }, n.cluster),
        el('td', { class: `ha-role ${n.active ? 'ok' : ''}` }, n.active ? 'active' : 'standby'),
        el('td', {}, n.version),
        el('td', {}, n.active ? '–' : age(n.lastEcho, now)),
      ));
    }
    table.append(tbody);
    body.append(table);
  }
  if (view.note) body.append(el('p', { class: 'muted ha-note' }, view.note));
  section.querySelector('.body').replaceWith(body);
}

// ---- the loop ----

async function pollSlow(perf) {
  if (!state.token) return;
  const ids = perf && perf.mode === 'primary' ? (perf.secondaries || []).map((s) => s.node_id) : [];
  await Promise.all(ids.map(async (id) => {
    const r = await get(`sys/replication/performance/primary/paths-filter/${encodeURIComponent(id)}`, true);
    // No filter: a 200 with an empty body (spec 4.2).
    state.filters.set(id, r.status === 200 ? (r.body ? r.body.data : null) : r.status === 404 ? null : `status ${r.status}`);
  }));
  const ev = await get('sys/replication/events?format=json', true);
  if (ev.status === 200 && ev.body) {
    const d = ev.body.data !== undefined ? ev.body.data : ev.body;
    state.events = Array.isArray(d) ? d : Array.isArray(d && d.events) ? d.events : [];
  } else if (ev.status === 404) state.events = 'This node has no event history endpoint.';
  else state.events = `events: status ${ev.status}`;
}

async function poll() {
  const now = Date.now();
  const [health, leader, ...kinds] = await Promise.all([
    get('sys/health?standbyok=true&perfstandbyok=true&drsecondarycode=200&performancestandbycode=200&sealedcode=200&uninitcode=200', false),
    get('sys/leader', false),
    ...KINDS.map((k) => get(`sys/replication/${k}/status`, false)),
  ]);
  renderNode(health);
  // Every node of the HA cluster needs a token (a standby relays sys/ha-status to the active node).
  const haOn = leader.status === 200 && leader.body && leader.body.ha_enabled === true;
  const members = haOn && state.token ? await get('sys/ha-status', true) : undefined;
  renderHa(haView(leader, !!(health.body && health.body.sealed), members), now);
  KINDS.forEach((k, i) => renderKind(k, kinds[i], now));
  if (now - state.slowAt >= SLOW_POLL_MS) {
    state.slowAt = now;
    await pollSlow(kinds[1].body && kinds[1].body.data);
  }
  renderEvents();
  document.getElementById('updated').textContent = new Date(now).toLocaleTimeString();
}

function loop() {
  poll().finally(() => setTimeout(loop, POLL_MS));
}

function start() {
  document.getElementById('token-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const input = document.getElementById('token');
    state.token = input.value.trim();
    input.value = '';
    if (state.token) sessionStorage.setItem(TOKEN_KEY, state.token);
    else sessionStorage.removeItem(TOKEN_KEY);
    state.slowAt = 0;
    state.events = undefined;
  });
  document.getElementById('token-clear').addEventListener('click', () => {
    state.token = '';
    sessionStorage.removeItem(TOKEN_KEY);
    state.filters.clear();
    state.events = undefined;
  });

  loop();
}

// In a browser; the tests load this file in Node for haView.
if (typeof document !== 'undefined') start();
else if (typeof module !== 'undefined') module.exports = { haView };
