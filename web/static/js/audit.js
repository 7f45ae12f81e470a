// Audit trail: every admin action (holds, maintenance, chains, keys,
// namespace changes from this console), who asked, when and how it ended,
// newest first, a page at a time.
import * as api from './api.js';
import { h, replace, badge, fmtTime } from './dom.js';

const PAGE = 200;

export function auditPage(root) {
  const msg = h('p', { class: 'error', role: 'alert' });
  const tbody = h('tbody');
  const more = h('div', { class: 'toolbar' });
  root.append(h('h1', {}, 'Audit trail'),
    h('p', { class: 'muted' }, 'Admin actions from this console and from flyfs admin, as the cluster manager recorded them (kept 90 days).'), msg,
    h('div', { class: 'table-wrap' }, h('table', { id: 'audit' },
      h('thead', {}, h('tr', {}, ['When', 'Who', 'Action', 'Result'].map(t => h('th', {}, t)))), tbody)), more);

  async function load(before) {
    try {
      const r = await api.get('/api/audit?' + api.q({ limit: PAGE, before }));
      msg.textContent = '';
      const rows = r.records.map(rec => h('tr', {},
        h('td', {}, fmtTime(rec.at)), h('td', { class: 'mono' }, rec.by), h('td', {}, rec.action),
        h('td', {}, rec.result === 'ok' ? badge('ok', 'ok') : h('span', { class: 'error' }, rec.result))));
      if (before) tbody.append(...rows); else replace(tbody, rows);
      if (!before && !r.records.length) replace(tbody, h('tr', {}, h('td', { colspan: 4, class: 'muted' }, 'No admin actions recorded yet.')));
      replace(more, r.records.length === PAGE
        ? h('button', { class: 'secondary small', onclick: () => load(r.records[r.records.length - 1].at) }, 'Older')
        : []);
    } catch (err) { msg.textContent = err.message; }
  }
  load('');
  return { stop() {} };
}
