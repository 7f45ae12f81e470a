// Overview: health in one line, services, capacity, live charts.
import * as api from './api.js';
import { h, replace, badge, fmtBytes, fmtNum, fmtAgo, dialog } from './dom.js';
import { chart } from './chart.js';

const RANGES = [['5m', '5 minutes'], ['1h', '1 hour'], ['24h', '24 hours']];

// fmtLatency shows seconds as µs, ms or s.
function fmtLatency(sec) {
  if (sec === null || sec === undefined || !isFinite(sec)) return '–';
  if (sec < 1e-3) return (sec * 1e6).toFixed(0) + ' µs';
  if (sec < 1) return (sec * 1e3).toFixed(sec < 0.01 ? 2 : 1) + ' ms';
  return sec.toFixed(2) + ' s';
}

export function overviewPage(root, params) {
  let range = RANGES.some(([v]) => v === (params && params.get('range'))) ? params.get('range') : '5m';
  const rangeBar = h('div', { class: 'toolbar', id: 'range' }, h('span', { class: 'muted' }, 'History:'),
    RANGES.map(([v, label]) => h('button', { class: 'small ' + (v === range ? '' : 'secondary'), dataset: { range: v }, onclick: () => { location.hash = '#/overview?' + api.q({ range: v }); } }, label)));
  const health = h('div', { class: 'card', id: 'health' }, 'Loading…');
  const stats = h('div', { class: 'grid', id: 'stats' });
  const charts = {
    read: chart('Read throughput (client reads)', v => fmtBytes(v) + '/s'),
    write: chart('Write throughput (client writes, counted once)', v => fmtBytes(v) + '/s'),
    readOps: chart('Read operations per second', v => fmtNum(v, 1) + '/s'),
    writeOps: chart('Write operations per second', v => fmtNum(v, 1) + '/s'),
    stored: chart('Stored bytes, net change per second (all replicas)', v => fmtBytes(v) + '/s'),
    inodes: chart('Inodes, net change per second', v => fmtNum(v, 1) + '/s'),
    readLat: chart('Read latency at the storage nodes (at most)', fmtLatency),
    writeLat: chart('Write latency, whole chain (at most)', fmtLatency),
  };
  // Latency charts have no value while no I/O is served (no operation, no
  // percentile): marked so, tests and readers tell that from a stuck chart.
  charts.readLat.el.dataset.latency = 'true';
  charts.writeLat.el.dataset.latency = 'true';
  // One chart per storage node: its client reads and writes.
  const nodeCharts = new Map();
  const nodesBox = h('div', { class: 'charts', id: 'node-charts' });
  const services = h('div');
  const disks = h('div');
  const gaps = h('div');
  root.append(
    h('h1', {}, 'Overview'), health,
    h('h2', {}, 'Cluster'), stats,
    h('h2', {}, 'Activity'), rangeBar, h('div', { class: 'charts' }, Object.values(charts).map(c => c.el)),
    h('h2', {}, 'Per storage node'), nodesBox,
    h('h2', {}, 'Services'), services,
    h('h2', {}, 'Capacity per disk'), disks,
    gaps);

  let timer = null, stopped = false;
  async function refresh() {
    try {
      const o = await api.get('/api/overview?' + api.q({ range }));
      render(o);
      schedule((o.sampleSeconds || 2) * 1000);
    } catch (err) {
      replace(health, h('div', { class: 'health' }, badge('unavailable'), h('span', {}, err.message)));
      schedule(3000);
    }
  }
  function schedule(ms) { if (!stopped) timer = setTimeout(refresh, ms); }

  // Node maintenance: a preview of what would be held (and which chains'
  // last serving replicas are skipped), then the holds; or the release.
  function maintenanceButton(n) {
    const inMaintenance = n.targets.some(t => t.held);
    const b = h('button', { class: 'small ' + (inMaintenance ? 'secondary' : 'danger'), dataset: { node: n.node, action: inMaintenance ? 'end-maintenance' : 'maintenance' } },
      inMaintenance ? 'End maintenance' : 'Maintenance…');
    b.addEventListener('click', async () => {
      try {
        if (inMaintenance) {
          if (!await dialog(`End maintenance of node ${n.node}?`, [h('p', {}, 'Its held targets rejoin their chains: waiting, then syncing, then serving.')], { okText: 'End maintenance' })) return;
          await api.del(`/api/nodes/${n.node}/maintenance`);
        } else {
          const plan = await api.post(`/api/nodes/${n.node}/maintenance`, { dryRun: true });
          const rows = plan.targets.map(t => h('tr', { dataset: { target: t.target } }, h('td', {}, String(t.target)), h('td', {}, String(t.chain)),
            h('td', {}, t.changed ? 'held offline' : 'kept: ' + t.skipped), h('td', { class: 'num' }, String(t.chainServing))));
          const body = [h('p', {}, `Each target of node ${n.node} its chain can spare is held offline; a chain's last serving replica is kept, so no chain stops serving.`),
            h('table', { id: 'maintenance-plan' }, h('thead', {}, h('tr', {}, ['Target', 'Chain', 'Action', 'Chain serving after'].map(x => h('th', {}, x)))), h('tbody', {}, rows))];
          if (!await dialog(`Maintenance of node ${n.node}`, body, { okText: 'Start maintenance', okClass: 'danger' })) return;
          await api.post(`/api/nodes/${n.node}/maintenance`, {});
        }
        refresh();
      } catch (err) {
        replace(health, h('div', { class: 'health' }, badge('unavailable'), h('span', {}, err.message)));
      }
    });
    return b;
  }

  // namespaceText splits the sum of file lengths: live files, and what
  // noncurrent versions, the trash, snapshots and removed files awaiting
  // GC hold (the console counts the first three every few minutes).
  function namespaceText(ns) {
    const r = ns.retained;
    const held = r ? r.versionBytes + r.trashBytes + r.snapshotBytes : 0;
    const parts = [`${fmtBytes(Math.max(ns.bytes - ns.gcBytes - held, 0))} in live files`];
    if (r && r.versionBytes) parts.push(`${fmtBytes(r.versionBytes)} in ${fmtNum(r.versionFiles)} noncurrent versions`);
    if (r && r.trashBytes) parts.push(`${fmtBytes(r.trashBytes)} in the trash`);
    if (r && r.snapshotBytes) parts.push(`${fmtBytes(r.snapshotBytes)} in snapshots (chunks shared with the live files)`);
    if (ns.gcBytes) parts.push(`${fmtBytes(ns.gcBytes)} removed and awaiting GC`);
    let when = '';
    if (!r) when = '; versions, trash and snapshots not counted yet';
    else if (r.error) when = `; versions, trash and snapshots not counted: ${r.error}`;
    else if (!r.complete) when = `; versions, trash and snapshots at least that, counted ${fmtAgo(r.at)} (the count stopped at its bound)`;
    else if (held) when = `; counted ${fmtAgo(r.at)}`;
    return parts.join(', ') + when;
  }

  function render(o) {
    replace(health,
      h('div', { class: 'health' }, badge(o.health.state, o.health.state), h('span', {}, healthLine(o))),
      o.health.reasons.length ? h('ul', {}, o.health.reasons.map(r => h('li', {}, r))) : null);
    const cap = o.capacity;
    const ns = o.namespace;
    replace(stats,
      stat('Chains', `${fmtNum(o.chains.total)} total`, `${o.chains.degraded} degraded, ${o.chains.unavailable} unavailable, ${o.chains.syncingTargets} targets syncing`),
      capacityStat(cap),
      ns ? stat('Namespace', `${fmtNum(ns.inodes)} inodes`, ns.error ? ns.error : namespaceText(ns)) : stat('Namespace', '–', 'no metadata client'),
      stat('GC queue', o.gcQueue === null ? '–' : fmtNum(o.gcQueue), o.gcQueue === null ? 'not reported' : 'removed files awaiting chunk reclaim'),
      stat('Routing version', String(o.routingVersion), o.bootstrapping ? 'primary is bootstrapping' : 'current'));
    const rates = o.rates || [];
    const pts = (f) => rates.map(r => ({ t: Date.parse(r.t), v: f(r) }));
    charts.read.draw(pts(r => r.readBytesPerSec));
    charts.write.draw(pts(r => r.writeBytesPerSec));
    charts.readOps.draw(pts(r => r.readOpsPerSec));
    charts.writeOps.draw(pts(r => r.writeOpsPerSec));
    charts.stored.draw(pts(r => r.storedBytesPerSec));
    charts.inodes.draw(pts(r => r.inodesPerSec));
    charts.readLat.draw([{ label: 'p50', points: pts(r => r.readP50) }, { label: 'p99', points: pts(r => r.readP99) }]);
    charts.writeLat.draw([{ label: 'p50', points: pts(r => r.writeP50) }, { label: 'p99', points: pts(r => r.writeP99) }]);
    const nodeIDs = [...new Set(rates.flatMap(r => (r.nodes || []).map(n => n.node)))].sort((a, b) => a - b);
    for (const id of nodeIDs) {
      if (!nodeCharts.has(id)) {
        const io = chart(`Node ${id}: client I/O`, v => fmtBytes(v) + '/s');
        const lat = chart(`Node ${id}: p99 latency (at most)`, fmtLatency);
        io.el.dataset.node = id; lat.el.dataset.node = id; lat.el.dataset.latency = 'true';
        nodeCharts.set(id, { io, lat });
      }
      const c = nodeCharts.get(id);
      const of = (f) => rates.map(r => { const n = (r.nodes || []).find(x => x.node === id); return { t: Date.parse(r.t), v: n ? f(n) : null }; });
      c.io.draw([{ label: 'read', points: of(n => n.readBytesPerSec) }, { label: 'write', points: of(n => n.writeBytesPerSec) }]);
      c.lat.draw([{ label: 'read', points: of(n => n.readP99) }, { label: 'write', points: of(n => n.writeP99) }]);
    }
    replace(nodesBox, nodeIDs.length ? nodeIDs.flatMap(id => [nodeCharts.get(id).io.el, nodeCharts.get(id).lat.el])
      : h('p', { class: 'muted' }, 'No storage node has served an interval yet.'));

    const rows = [];
    for (const m of o.mgmtds) rows.push(h('tr', {}, h('td', {}, 'mgmtd'), h('td', {}, m.id), h('td', { class: 'mono' }, m.addr), h('td', {}, badge('alive', m.primary ? 'primary' : 'standby')), h('td', {}, '–'), h('td', {}, '')));
    for (const s of o.services || []) rows.push(h('tr', {}, h('td', {}, s.kind), h('td', {}, s.id), h('td', { class: 'mono' }, s.addr || '–'), h('td', {}, badge(s.alive ? 'alive' : 'failed', s.alive ? 'alive' : 'gone')), h('td', {}, fmtAgo(s.lastSeen)), h('td', { class: 'muted' }, cacheText(s.cache))));
    for (const n of o.storage) rows.push(h('tr', { class: n.state === 'alive' ? '' : 'degraded' },
      h('td', {}, 'storaged'), h('td', {}, 'node ' + n.node), h('td', { class: 'mono' }, n.addr || '–'), h('td', {}, badge(n.state === 'alive' ? 'alive' : 'failed', n.state)),
      h('td', {}, fmtAgo(n.lastHeartbeat)), h('td', { class: 'muted' }, n.targets.map(t => `${t.target} ${t.public ? t.public + ' (node: ' + t.local + ')' : t.local}${t.held ? ', held by ' + (t.heldBy || 'an admin') : ''}`).join('; '),
        n.targets.length ? [' ', maintenanceButton(n)] : null)));
    replace(services, h('div', { class: 'table-wrap' }, h('table', { id: 'services' },
      h('thead', {}, h('tr', {}, ['Service', 'ID', 'Address', 'State', 'Last heartbeat', 'Targets, cache'].map(t => h('th', {}, t)))),
      h('tbody', {}, rows))));

    // Free space and size are the file system's: disks sharing one show
    // the same figures, and the total counts them once.
    const drows = [];
    for (const n of o.storage) for (const d of n.disks) {
      const almostFull = d.usedPercent !== null && d.usedPercent > 90;
      drows.push(h('tr', { class: d.readOnly || d.full || almostFull ? 'degraded' : '' },
        h('td', {}, 'node ' + n.node), h('td', { class: 'mono' }, d.path, d.sharedFS > 1 ? h('div', { class: 'muted' }, `file system shared by ${d.sharedFS} disks`) : null),
        h('td', { class: 'num' }, fmtBytes(d.usedBytes)),
        h('td', { class: 'num' }, d.freeBytes ? fmtBytes(d.freeBytes) : '–'),
        h('td', { class: 'num' }, d.capacityBytes ? fmtBytes(d.capacityBytes) : '–'),
        h('td', { class: 'num' }, d.usedPercent === null ? '–' : d.usedPercent.toFixed(1) + ' %'),
        h('td', { class: 'num' }, fmtNum(d.chunks)),
        h('td', {}, d.readOnly ? badge('failed', 'read-only') : d.full ? badge('degraded', 'full') : almostFull ? badge('degraded', 'over 90 %') : badge('ok', 'writable'), d.readOnlyReason ? ' ' + d.readOnlyReason : '')));
    }
    drows.push(h('tr', {}, h('td', {}, h('b', {}, 'Total')), h('td', {}, `${cap.disks} disk${cap.disks === 1 ? '' : 's'} on ${cap.fileSystems} file system${cap.fileSystems === 1 ? '' : 's'}`),
      h('td', { class: 'num' }, h('b', {}, fmtBytes(cap.usedBytes))),
      h('td', { class: 'num' }, cap.freeKnown ? fmtBytes(cap.freeBytes) : '–'),
      h('td', { class: 'num' }, cap.totalKnown ? fmtBytes(cap.totalBytes) : '–'),
      h('td', { class: 'num' }, cap.usedPercent === null ? '–' : cap.usedPercent.toFixed(1) + ' %'), h('td', {}, ''), h('td', {}, '')));
    replace(disks, h('div', { class: 'table-wrap' }, h('table', { id: 'disks' },
      h('thead', {}, h('tr', {}, ['Node', 'Disk', 'Data files', 'Free', 'Capacity', 'Use', 'Chunks', 'State'].map((t, i) => h('th', { class: i >= 2 && i <= 6 ? 'num' : '', title: colHelp[t] }, t)))),
      h('tbody', {}, drows))));
    replace(gaps, o.unreported.length ? [h('h3', {}, 'Not reported by the cluster'), h('ul', { class: 'muted' }, o.unreported.map(u => h('li', {}, u)))] : []);
  }

  refresh();
  return { stop() { stopped = true; clearTimeout(timer); } };
}

function healthLine(o) {
  if (o.health.state === 'healthy') return `All ${o.chains.total} chains serving; ${o.storage.length} storage nodes alive.`;
  return o.health.reasons[0] || '';
}

const colHelp = {
  'Data files': 'bytes of the disk\'s data files (flyfs\'s chunks, preallocated blocks included)',
  Free: 'what the file system under the disk can still give (df\'s Avail)',
  Capacity: 'the file system\'s size less the blocks reserved for root (df\'s Used + Avail)',
  Use: 'share of the file system in use (df\'s Use%); over 90 % the overview calls it degraded',
};

// capacityStat: the file systems under the disks, each counted once:
// used of total with its percentage and a bar, what is free, and flyfs's
// own data files.
function capacityStat(cap) {
  const where = `${cap.fileSystems} file system${cap.fileSystems === 1 ? '' : 's'}, ${cap.disks} disk${cap.disks === 1 ? '' : 's'}`;
  if (cap.usedPercent === null) {
    return stat('Capacity', fmtBytes(cap.usedBytes) + ' in data files',
      cap.freeKnown ? `${fmtBytes(cap.freeBytes)} free on ${where} (size not reported)` : `${where} (free space not reported)`);
  }
  const bar = h('div');
  bar.style.width = Math.min(cap.usedPercent, 100).toFixed(1) + '%'; // CSSOM: allowed by the page's CSP, unlike style attributes
  const el = stat('Capacity', `${cap.usedPercent.toFixed(1)} % used`,
    `${fmtBytes(cap.fsUsedBytes)} used of ${fmtBytes(cap.totalBytes)}, ${fmtBytes(cap.freeBytes)} free on ${where}; ${fmtBytes(cap.usedBytes)} in flyfs data files`);
  el.id = 'capacity';
  el.insertBefore(h('div', { class: 'progress' + (cap.usedPercent > 90 ? ' warn' : '') }, bar), el.lastChild);
  return el;
}

function stat(label, value, sub) {
  return h('div', { class: 'card stat' }, h('div', { class: 'label' }, label), h('div', { class: 'value' }, value), h('div', { class: 'muted' }, sub));
}

// cacheText sums up a client's cache tiers: held of capacity and hit ratio.
function cacheText(c) {
  if (!c) return '';
  const tiers = [];
  for (const [name, t] of [['memory', c.memory], ['disk', c.disk]]) {
    if (!t || !t.capacityBytes) continue;
    const looked = t.hits + t.misses;
    const ratio = looked ? ` · ${(100 * t.hits / looked).toFixed(1)}% hits` : '';
    const bad = t.corrupt ? ` · ${t.corrupt} corrupt` : '';
    tiers.push(`${name} cache ${fmtBytes(t.usedBytes)} of ${fmtBytes(t.capacityBytes)}${ratio}${bad}`);
  }
  return tiers.join('; ');
}
