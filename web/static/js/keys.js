// Access keys: list, create (the secret is shown once), per-bucket
// permissions, rotate the secret, revoke.
import * as api from './api.js';
import { h, replace, badge, fmtTime, dialog, confirmDialog } from './dom.js';

export function keysPage(root) {
  const msg = h('p', { class: 'error', role: 'alert' });
  const tbody = h('tbody');
  root.append(h('h1', {}, 'Access keys'),
    h('div', { class: 'toolbar' }, h('button', { id: 'create-key', onclick: create }, 'Create key')), msg,
    h('div', { class: 'table-wrap' }, h('table', { id: 'keys' },
      h('thead', {}, h('tr', {}, ['Access key', 'Description', 'Rights', 'Bucket permissions', 'Created', ''].map(t => h('th', {}, t)))),
      tbody)));

  async function load() {
    try {
      const r = await api.get('/api/keys');
      msg.textContent = '';
      replace(tbody, r.keys.map(k => h('tr', { dataset: { key: k.accessKey } },
        h('td', { class: 'mono' }, k.accessKey), h('td', {}, k.description || ''),
        h('td', {}, k.admin ? badge('syncing', 'admin') : badge('ok', 'data')),
        h('td', {}, permsText(k.buckets)), h('td', {}, fmtTime(k.created)),
        h('td', {},
          h('button', { class: 'secondary small', onclick: () => editPerms(k) }, 'Permissions'), ' ',
          h('button', { class: 'secondary small', dataset: { action: 'rotate' }, onclick: () => rotate(k) }, 'Rotate secret'), ' ',
          h('button', { class: 'danger small', dataset: { action: 'revoke' }, onclick: () => revoke(k) }, 'Revoke')))));
      if (!r.keys.length) replace(tbody, h('tr', {}, h('td', { colspan: 6, class: 'muted' }, 'No keys.')));
    } catch (err) { msg.textContent = err.message; }
  }

  async function create() {
    const desc = h('input', { id: 'key-desc', placeholder: 'what it is for' });
    const admin = h('input', { type: 'checkbox', id: 'key-admin' });
    const perms = permEditor([]);
    if (!await dialog('Create access key', [h('label', {}, 'Description', desc), h('label', { class: 'perm-row' }, admin, 'Admin rights (console and every bucket)'), perms.el], { okText: 'Create' })) return;
    try {
      const k = await api.post('/api/keys', { description: desc.value, admin: admin.checked, buckets: perms.value() });
      await dialog('Key created', [
        h('p', {}, 'Copy the secret key now: it is shown only this once.'),
        h('div', {}, 'Access key'), h('div', { class: 'secret', id: 'new-access' }, k.accessKey), copyButton(k.accessKey, 'copy-access'),
        h('div', {}, 'Secret key'), h('div', { class: 'secret', id: 'new-secret' }, k.secret), copyButton(k.secret, 'copy-secret')],
        { okText: 'Done', noCancel: true });
      replace(document.getElementById('dialog-body')); // the secret leaves the page with the dialog
      load();
    } catch (err) { msg.textContent = err.message; }
  }

  async function editPerms(k) {
    const perms = permEditor(k.buckets);
    if (!await dialog('Bucket permissions of ' + k.accessKey, [perms.el], { okText: 'Save' })) return;
    try {
      await api.put(`/api/keys/${encodeURIComponent(k.accessKey)}/buckets`, { buckets: perms.value() });
      load();
    } catch (err) { msg.textContent = err.message; }
  }

  async function rotate(k) {
    const own = r => r && r.accessKey === k.accessKey;
    let me = null;
    try { me = await api.get('/api/session'); } catch (_) { /* asked without */ }
    const what = 'The key gets a new secret key, shown once; programs using the old one lose access within a second, and console sessions signed in with it end' +
      (own(me) ? ' — yours included: sign in again with the new secret.' : '.') +
      (k.admin ? ' A root key given by FLYFS_ACCESS_KEY/FLYFS_SECRET_KEY takes the environment\'s secret again when its gateway restarts: change the environment too.' : '');
    if (!await confirmDialog('Rotate the secret of ' + k.accessKey + '?', what, 'Rotate')) return;
    try {
      const n = await api.post(`/api/keys/${encodeURIComponent(k.accessKey)}/rotate`, {});
      await dialog('Secret rotated', [
        h('p', {}, 'Copy the new secret key now: it is shown only this once.'),
        h('div', {}, 'Access key'), h('div', { class: 'secret', id: 'new-access' }, n.accessKey), copyButton(n.accessKey, 'copy-access'),
        h('div', {}, 'Secret key'), h('div', { class: 'secret', id: 'new-secret' }, n.secret), copyButton(n.secret, 'copy-secret')],
        { okText: 'Done', noCancel: true });
      replace(document.getElementById('dialog-body'));
      load();
    } catch (err) { msg.textContent = err.message; }
  }

  async function revoke(k) {
    if (!await confirmDialog('Revoke ' + k.accessKey + '?', 'Programs using this key lose access at once, and its console sessions end.', 'Revoke')) return;
    try {
      await api.del('/api/keys/' + encodeURIComponent(k.accessKey));
      load();
    } catch (err) { msg.textContent = err.message; }
  }

  load();
  return { stop() {} };
}

// copyButton copies text to the clipboard (or, where the page may not,
// selects it for Ctrl+C).
function copyButton(text, id) {
  const b = h('button', { type: 'button', class: 'secondary small', id }, 'Copy');
  b.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(text);
      b.textContent = 'Copied';
    } catch (_) {
      const el = b.previousElementSibling;
      const range = document.createRange();
      range.selectNodeContents(el);
      const sel = getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
      b.textContent = 'Selected: press Ctrl+C';
    }
  });
  return b;
}

function permsText(ps) {
  if (!ps.length) return h('span', { class: 'muted' }, 'none');
  return ps.map(p => `${p.bucket === '*' ? 'every bucket' : p.bucket}: ${[p.read && 'read', p.write && 'write'].filter(Boolean).join('+')}`).join('; ');
}

// permEditor edits a list of {bucket, read, write} rows.
function permEditor(initial) {
  const rows = h('div', { class: 'perm-rows' });
  const el = h('div', {}, h('div', {}, 'Bucket permissions ("*" for every bucket)'), rows,
    h('button', { type: 'button', class: 'secondary small', onclick: () => add({ bucket: '', read: true, write: false }) }, 'Add bucket'));
  function add(p) {
    const b = h('input', { value: p.bucket, placeholder: 'bucket', size: 20 });
    const r = h('input', { type: 'checkbox' }); r.checked = p.read;
    const w = h('input', { type: 'checkbox' }); w.checked = p.write;
    const row = h('div', { class: 'perm-row' }, b, h('label', { class: 'perm-row' }, r, 'read'), h('label', { class: 'perm-row' }, w, 'write'),
      h('button', { type: 'button', class: 'secondary small', onclick: () => row.remove() }, 'Remove'));
    row.get = () => ({ bucket: b.value.trim(), read: r.checked, write: w.checked });
    rows.append(row);
  }
  initial.forEach(add);
  return { el, value: () => [...rows.children].map(r => r.get()).filter(p => p.bucket) };
}
