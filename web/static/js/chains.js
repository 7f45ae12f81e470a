// Chains: every chain, unhealthy first, a page at a time (thousands of
// chains stay fast: the server sorts and pages), targets in order with their
// states, recovery progress, and hold/release buttons.
import * as api from './api.js';
import { h, replace, clear, badge, fmtBytes, fmtNum, fmtDuration, confirmDialog, dialog } from './dom.js';

const PAGE = 100;

export function chainsPage(root, params) {
  let offset = Number(params.get('offset')) || 0;
  let state = params.get('state') || 'all';
  let query = params.get('q') || '';
  let table = params.get('table') || '';
  const summary = h('div', { class: 'muted', id: 'chains-summary' }, 'Loading…');
  const tables = h('span');
  const stateSel = h('select', { id: 'chains-state', onchange: () => { state = stateSel.value; offset = 0; refresh(); } },
    h('option', { value: 'all' }, 'All chains'), h('option', { value: 'degraded' }, 'Degraded only'));
  stateSel.value = state;
  const search = h('input', { placeholder: 'chain, target or node id', id: 'chains-q', size: 22, value: query });
  search.addEventListener('change', () => { query = search.value.trim(); offset = 0; refresh(); });
  const pager = h('div', { class: 'pager' });
  const body = h('tbody');
  const msg = h('p', { class: 'error' });
  const newBtn = h('button', { class: 'secondary small', id: 'chains-new', onclick: () => newChains() }, 'New chains…');
  root.append(h('h1', {}, 'Chains'), summary,
    h('div', { class: 'toolbar' }, stateSel, tables, search, newBtn, h('span', { class: 'spacer' }), pager), msg,
    h('div', { class: 'table-wrap' }, h('table', { id: 'chains' },
      h('thead', {}, h('tr', {}, h('th', {}, 'Chain'), h('th', {}, 'Version'), h('th', {}, 'State'), h('th', {}, 'Tables'), h('th', {}, 'Targets, head first'))),
      body)));

  let timer = null, stopped = false, busy = false;
  async function refresh() {
    clearTimeout(timer);
    try {
      const r = await api.get('/api/chains?' + api.q({ offset, limit: PAGE, state, q: query, table }));
      msg.textContent = '';
      render(r);
    } catch (err) {
      msg.textContent = err.message;
    }
    if (!stopped) timer = setTimeout(() => { if (!busy) refresh(); else timer = setTimeout(refresh, 1000); }, 3000);
  }

  function render(r) {
    summary.textContent = `Routing version ${r.routingVersion}: ${fmtNum(r.total)} chains, ${fmtNum(r.degraded)} not fully serving` +
      (r.bootstrapping ? ' (a new primary is still hearing from every node)' : '');
    const tsel = h('select', { id: 'chains-table', onchange: () => { table = tsel.value; offset = 0; refresh(); } },
      h('option', { value: '' }, 'Every table'),
      r.tables.map(t => h('option', { value: t.id }, `Table ${t.id} (v${t.versions}, ${t.chains} chains)`)));
    tsel.value = table;
    replace(tables, tsel);
    const last = Math.min(r.offset + r.chains.length, r.matched);
    replace(pager,
      h('button', { class: 'secondary small', disabled: r.offset === 0, onclick: () => { offset = Math.max(0, offset - PAGE); refresh(); } }, '‹ Previous'),
      h('span', {}, r.matched ? `${fmtNum(r.offset + 1)}–${fmtNum(last)} of ${fmtNum(r.matched)}` : 'no chains match'),
      h('button', { class: 'secondary small', disabled: last >= r.matched, onclick: () => { offset += PAGE; refresh(); } }, 'Next ›'));
    replace(body, r.chains.map(c => h('tr', { class: c.state === 'ok' ? '' : c.state, dataset: { chain: c.id } },
      h('td', {}, String(c.id)), h('td', {}, 'v' + c.version), h('td', {}, badge(c.state)),
      h('td', {}, c.tables.join(', ') || '–'),
      h('td', {}, h('div', { class: 'targets' }, c.targets.map(t => targetBox(t, c)))))));
  }

  function targetBox(t, c) {
    // Only a held target is released; when mgmtd did not say, any offline one.
    const held = t.held === null || t.held === undefined ? t.public === 'offline' || t.public === 'lastsrv' : t.held;
    let btn;
    if (!held && t.public === 'syncing') {
      // Taking a recovering replica offline only throws its progress away.
      btn = h('span', { class: 'muted small' }, 'recovering: can be taken offline once it serves');
    } else {
      btn = h('button', { class: 'small ' + (held ? 'secondary' : 'danger'), dataset: { target: t.id, action: held ? 'online' : 'offline' } },
        held ? 'Bring online' : 'Take offline');
      btn.addEventListener('click', () => hold(t, !held, c.id));
    }
    const rec = t.recovery;
    return h('div', { class: 'target', dataset: { target: t.id, public: t.public } },
      h('div', { class: 'head' }, `Target ${t.id} `, badge(t.public), ' ', badge(t.local), t.held ? [' ', badge('held', t.heldBy ? 'held by ' + t.heldBy : 'held by an admin')] : null),
      h('div', { class: 'where' }, `node ${t.node} disk ${t.disk}`, t.nodeAddr ? ` · ${t.nodeAddr}` : ''),
      rec ? recovery(rec) : (t.public === 'syncing' ? h('div', { class: 'where' }, 'recovery starting…') : null),
      h('div', {}, btn));
  }

  function recovery(rec) {
    const pct = rec.bytes ? 100 * Math.min(rec.bytesDone / rec.bytes, 1) : rec.chunks ? 100 * rec.chunksDone / rec.chunks : 0;
    const bar = h('div');
    bar.style.width = pct.toFixed(1) + '%'; // CSSOM: allowed by the page's CSP, unlike style attributes
    return h('div', { class: 'recovery' },
      h('div', { class: 'progress' }, bar),
      h('div', { class: 'where' }, `${fmtNum(rec.chunksDone)} of ${fmtNum(rec.chunks)} chunks, ${fmtBytes(rec.bytesDone)}${rec.bytes ? ' of ' + fmtBytes(rec.bytes) : ''} sent`,
        rec.bytesPerSec !== null ? ` · ${fmtBytes(rec.bytesPerSec)}/s` : '',
        rec.secondsLeft !== null ? ` · ${fmtDuration(rec.secondsLeft)} left` : '',
        ` · from target ${rec.from}`));
  }

  async function hold(t, offline, chain) {
    busy = true;
    try {
      const ok = offline
        ? await confirmDialog(`Take target ${t.id} offline?`, `Target ${t.id} (node ${t.node}, disk ${t.disk}) is ${t.public}. Chain ${chain} loses this replica until you bring it back online; it then recovers through waiting and syncing.`, 'Take offline')
        : await confirmDialog(`Bring target ${t.id} online?`, `Target ${t.id} rejoins its chain as its node reports it: waiting, then syncing, then serving.`, 'Bring online', false);
      if (!ok) return;
      try {
        await api.post(`/api/targets/${t.id}/${offline ? 'offline' : 'online'}`);
      } catch (err) {
        if (!(err instanceof api.ApiError) || err.code !== 'last_serving') throw err;
        // The last serving replica: the server refused. Forcing it takes the
        // typed chain id.
        const typed = h('input', { id: 'force-chain', inputmode: 'numeric', autocomplete: 'off', size: 8 });
        const forced = await dialog(`Target ${t.id} is the last serving replica of chain ${chain}`, [
          h('p', {}, `Taking it offline stops every read and write of the files on chain ${chain} until it is back online: S3 requests and mounts that touch them fail or wait.`),
          h('p', {}, `Type the chain id, ${chain}, to take it offline anyway.`), typed], { okText: 'Take the chain offline', okClass: 'danger' });
        if (!forced) return;
        await api.post(`/api/targets/${t.id}/offline`, { force: true, chain: Number(typed.value.trim()) });
      }
      msg.textContent = '';
      await refresh();
    } catch (err) {
      msg.textContent = err.message;
    } finally {
      busy = false;
    }
  }

  // newChains computes a chain table as `flyfs admin create-chains` does,
  // previews its chains and balance figures as the fields change, and
  // creates it on confirmation.
  async function newChains() {
    busy = true;
    try {
      const d = await api.get('/api/chains/new');
      const field = (id, label, value, attrs = {}) => {
        const input = h('input', Object.assign({ id: 'ct-' + id, value: String(value), size: 10, autocomplete: 'off' }, attrs));
        return [input, h('label', { for: 'ct-' + id }, label, ' ', input)];
      };
      const [nodes, nodesL] = field('nodes', 'Storage nodes', d.nodes.join(','), { size: 24 });
      const [disks, disksL] = field('disks', 'Disks per node', d.disksPerNode, { inputmode: 'numeric' });
      const [repl, replL] = field('replicas', 'Replicas', d.replicas, { inputmode: 'numeric' });
      const [count, countL] = field('count', 'Chains', d.chains, { inputmode: 'numeric' });
      const [first, firstL] = field('first', 'First chain id', d.firstChain, { inputmode: 'numeric' });
      const [seed, seedL] = field('seed', 'Seed', 0, { inputmode: 'numeric' });
      const layout = h('select', { id: 'ct-layout' }, h('option', { value: 'balanced' }, 'balanced'), h('option', { value: 'simple' }, 'simple'));
      const figures = h('div', { id: 'ct-figures', class: 'muted' }, 'Computing…');
      const preview = h('div', { id: 'ct-preview', class: 'table-wrap' });
      const spec = () => ({
        nodes: nodes.value.split(',').map(x => x.trim()).filter(Boolean).map(Number),
        disksPerNode: Number(disks.value), replicas: Number(repl.value), chains: Number(count.value),
        layout: layout.value, seed: Number(seed.value), firstChain: Number(first.value),
      });
      let seq = 0;
      const plan = async () => {
        const mine = ++seq;
        try {
          const p = await api.post('/api/chains/plan', spec());
          if (mine !== seq) return;
          const b = p.balance;
          replace(figures, h('p', {}, b.text + '.'),
            h('p', {}, `When a disk fails, at most ${(100 * b.worst).toFixed(1)}% of its reads land on one other disk (ideal ${(100 * b.ideal).toFixed(1)}%` +
              (b.simple ? `, the simple layout ${(100 * b.simple).toFixed(1)}%` : '') + ').'));
          figures.className = 'muted';
          replace(preview, h('table', {}, h('thead', {}, h('tr', {}, h('th', {}, 'Chain'), h('th', {}, 'Targets, head first (id @ node/disk)'))),
            h('tbody', {}, p.chains.slice(0, 200).map(c => h('tr', { dataset: { chain: c.id } }, h('td', {}, String(c.id)),
              h('td', {}, c.targets.map(t => `${t.id} @ ${t.node}/${t.disk}`).join(' · ')))))),
            p.chains.length > 200 ? h('p', { class: 'muted' }, `and ${fmtNum(p.chains.length - 200)} more`) : null);
        } catch (err) {
          if (mine !== seq) return;
          figures.textContent = err.message;
          figures.className = 'error';
          clear(preview);
        }
      };
      for (const el of [nodes, disks, repl, count, first, seed, layout]) el.addEventListener('change', plan);
      plan();
      const ok = await dialog('New chains', [
        h('p', {}, 'Compute a chain table over storage nodes\' disks and create its chains (as flyfs admin create-chains). The balanced layout spreads a failed disk\'s reads evenly over the other disks.'),
        h('div', { class: 'form-grid' }, nodesL, disksL, replL, countL, h('label', { for: 'ct-layout' }, 'Layout ', layout), seedL, firstL),
        figures, preview], { okText: 'Create chains' });
      if (!ok) return;
      const r = await api.post('/api/chains', spec());
      msg.textContent = '';
      await refresh();
      summary.append(` · created ${fmtNum(r.chains.length)} chains (routing version ${r.routingVersion})`);
    } catch (err) {
      msg.textContent = err.message;
    } finally {
      busy = false;
    }
  }

  refresh();
  return { stop() { stopped = true; clearTimeout(timer); } };
}
