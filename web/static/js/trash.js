// Trash: what removals kept (metad --trash-days), oldest first, each
// restorable where it was or into another directory.
import * as api from './api.js';
import { h, replace, fmtBytes, fmtTime, dialog, confirmDialog } from './dom.js';

export function trashPage(root) {
  const msg = h('p', { class: 'error', role: 'alert' });
  const info = h('p', { class: 'muted', id: 'trash-info' });
  const done = h('p', { class: 'info', id: 'trash-done', role: 'status' });
  const tbody = h('tbody');
  const emptyBtn = h('button', { class: 'danger', id: 'trash-empty', onclick: empty }, 'Empty trash');
  root.append(h('h1', {}, 'Trash'), info, h('div', { class: 'toolbar' }, emptyBtn), msg, done,
    h('div', { class: 'table-wrap' }, h('table', { id: 'trash' },
      h('thead', {}, h('tr', {}, ['Removed', 'From', 'Type', 'Size', ''].map(t => h('th', {}, t)))), tbody)));

  async function load() {
    try {
      const r = await api.get('/api/trash');
      msg.textContent = '';
      info.textContent = r.days > 0
        ? `Removed files and trees are kept ${r.days} day(s), then purged.`
        : 'The trash is off (flyfs server --trash-days N, or metad --trash-days N, turns it on).';
      const rows = r.entries.map(e => h('tr', { dataset: { ino: String(e.ino) } },
        h('td', {}, fmtTime(e.removed)), h('td', { class: 'mono' }, e.path + (e.type === 'dir' ? '/' : '')), h('td', {}, e.type),
        h('td', { class: 'num' }, e.type === 'file' ? fmtBytes(e.size) : ''),
        h('td', {},
          h('button', { class: 'secondary small', dataset: { action: 'restore' }, onclick: () => restore(e, '') }, 'Restore'), ' ',
          h('button', { class: 'secondary small', dataset: { action: 'restore-to' }, onclick: () => restoreTo(e) }, 'Restore to…'))));
      replace(tbody, rows.length ? rows : h('tr', {}, h('td', { colspan: 5, class: 'muted' }, 'The trash is empty.')));
    } catch (err) { msg.textContent = err.message; }
  }

  async function restore(e, to) {
    const where = to || e.path;
    if (!await confirmDialog(`Restore ${e.path}?`, `It goes back to ${where}${to ? '/' + e.path.split('/').pop() : ''}; directories that were removed on the way are made again.`, 'Restore')) return;
    try {
      const r = await api.post('/api/trash/restore', { ino: e.ino, to });
      msg.textContent = '';
      done.textContent = `Restored ${r.restored}.`;
      load();
    } catch (err) { msg.textContent = err.message; }
  }

  async function empty() {
    if (!await confirmDialog('Empty the trash?', 'Everything in it goes for good now (its space is freed as GC collects it). This cannot be undone.', 'Empty trash')) return;
    try {
      const r = await api.post('/api/trash/empty', {});
      msg.textContent = '';
      done.textContent = `Emptied the trash (${r.entries} entries).`;
      load();
    } catch (err) { msg.textContent = err.message; }
  }

  async function restoreTo(e) {
    const input = h('input', { id: 'restore-to', placeholder: '/a/directory', size: 40, required: true });
    if (!await dialog(`Restore ${e.path} into`, [h('label', {}, 'Directory', input)], { okText: 'Next' })) return;
    restore(e, input.value.trim());
  }

  load();
  return { stop() {} };
}
