// Clients: every client the cluster manager knows (mounts, the front ends'
// shared client) and the files open for writing, by client.
import * as api from './api.js';
import { h, replace, fmtBytes, fmtAgo, fmtTime } from './dom.js';

export function clientsPage(root) {
  const msg = h('p', { class: 'error', role: 'alert' });
  const info = h('p', { class: 'muted', id: 'sessions-info' });
  const clients = h('tbody');
  const files = h('tbody');
  root.append(h('h1', {}, 'Clients'), msg,
    h('div', { class: 'table-wrap' }, h('table', { id: 'clients' },
      h('thead', {}, h('tr', {}, ['Client', 'State', 'Last seen', 'Open files'].map(t => h('th', {}, t)))), clients)),
    h('h2', {}, 'Files open for writing'), info,
    h('div', { class: 'table-wrap' }, h('table', { id: 'sessions' },
      h('thead', {}, h('tr', {}, ['File', 'Reported size', 'Client', 'Open since'].map(t => h('th', {}, t)))), files)));

  async function load() {
    try {
      const r = await api.get('/api/sessions');
      msg.textContent = '';
      replace(clients, r.clients.length ? r.clients.map(c => h('tr', { dataset: { client: c.id } },
        h('td', { class: 'mono' }, c.id), h('td', {}, c.alive ? 'alive' : 'gone'),
        h('td', {}, c.lastSeen ? fmtAgo(c.lastSeen) : ''), h('td', { class: 'num' }, String(c.open))))
        : h('tr', {}, h('td', { colspan: 4, class: 'muted' }, 'No client is registered.')));
      replace(files, r.sessions.length ? r.sessions.map(s => h('tr', { dataset: { ino: String(s.ino) } },
        h('td', { class: 'mono' }, s.path || `inode ${s.ino}`), h('td', { class: 'num' }, fmtBytes(s.size)),
        h('td', { class: 'mono' }, s.client + (s.known ? '' : ' (not registered: closed once metad sees it gone)')),
        h('td', {}, s.opened ? fmtTime(s.opened) : '')))
        : h('tr', {}, h('td', { colspan: 4, class: 'muted' }, 'No file is open for writing.')));
      info.textContent = (r.more ? `The first ${r.sessions.length} sessions. ` : '') +
        'A file is named by the path it was created under, one opened by inode (a mount reopening it) by its inode; writers report their size every few seconds and at close.';
    } catch (err) { msg.textContent = err.message; }
  }

  load();
  const timer = setInterval(load, 5000);
  return { stop() { clearInterval(timer); } };
}
