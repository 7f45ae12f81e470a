// Snapshots: read-only point-in-time copies of directory trees (files share
// chunks with the live ones), listed with what they hold; made of a
// directory, deleted with a confirmation that names what goes.
import * as api from './api.js';
import { h, replace, fmtBytes, fmtTime, dialog, confirmDialog } from './dom.js';

export function snapshotsPage(root) {
  const msg = h('p', { class: 'error', role: 'alert' });
  const done = h('p', { class: 'info', id: 'snap-done', role: 'status' });
  const tbody = h('tbody');
  const makeBtn = h('button', { id: 'snap-create', onclick: make }, 'Make a snapshot…');
  root.append(h('h1', {}, 'Snapshots'),
    h('p', { class: 'muted' }, 'A snapshot copies a directory tree as it is at one moment without copying data: its files share chunks with the live ones until either is written. It is read-only, under /TOP/.flyfs-snapshots/NAME, readable through the mount and over S3 as that prefix.'),
    h('div', { class: 'toolbar' }, makeBtn), msg, done,
    h('div', { class: 'table-wrap' }, h('table', { id: 'snapshots' },
      h('thead', {}, h('tr', {}, ['Name', 'Of', 'Made', 'Files', 'Size', 'Where', ''].map(t => h('th', {}, t)))), tbody)));

  async function load() {
    try {
      const r = await api.get('/api/snapshots');
      msg.textContent = '';
      const rows = r.snapshots.map(s => h('tr', { dataset: { name: s.name } },
        h('td', {}, s.name, s.building ? h('span', { class: 'badge degraded' }, ' unfinished') : ''),
        h('td', { class: 'mono' }, s.source), h('td', {}, fmtTime(s.created)),
        h('td', { class: 'num' }, String(s.files)), h('td', { class: 'num' }, fmtBytes(s.bytes)),
        h('td', { class: 'mono' }, h('a', { href: '#/ns' + s.path }, s.path)),
        h('td', {}, h('button', { class: 'danger small', dataset: { action: 'delete' }, onclick: () => del(s) }, 'Delete'))));
      replace(tbody, rows.length ? rows : h('tr', {}, h('td', { colspan: 7, class: 'muted' }, 'No snapshots.')));
    } catch (err) { msg.textContent = err.message; }
  }

  async function make() {
    const dir = h('input', { id: 'snap-path', placeholder: '/bucket/dir', size: 40, required: true });
    const name = h('input', { id: 'snap-name', placeholder: 'before-cleanup', size: 24, required: true });
    if (!await dialog('Make a snapshot', [h('label', {}, 'Directory', dir), h('label', {}, 'Name', name)], { okText: 'Make snapshot' })) return;
    done.textContent = 'Making the snapshot…';
    try {
      const s = await api.post('/api/snapshots', { path: dir.value.trim(), name: name.value.trim() });
      msg.textContent = '';
      let text = `Snapshot ${s.name} of ${s.source}: ${s.files} files (${fmtBytes(s.bytes)}), ${s.dirs} directories, at ${s.path}.`;
      if (s.skipped.length) text += ` Not captured: ${s.skipped.join(', ')}.`;
      done.textContent = text;
      load();
    } catch (err) { done.textContent = ''; msg.textContent = err.message; }
  }

  async function del(s) {
    if (!await confirmDialog(`Delete snapshot ${s.name}?`, `Its copy of ${s.source} (${s.files} files, ${fmtBytes(s.bytes)}) goes for good; the data its files share with live files stays. This cannot be undone.`, 'Delete snapshot')) return;
    try {
      await api.post('/api/snapshots/delete', { top: s.top, name: s.name });
      msg.textContent = '';
      done.textContent = `Deleted snapshot ${s.name}.`;
      load();
    } catch (err) { msg.textContent = err.message; }
  }

  load();
  return { stop() {} };
}
