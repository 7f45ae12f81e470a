// Namespace browser: directories a page at a time, details, upload (drag and
// drop, in parts with progress), download, mkdir, rename/move, delete.
import * as api from './api.js';
import { h, replace, badge, fmtBytes, fmtTime, dialog, confirmDialog } from './dom.js';

const PAGE = 200;
const PART = 8 << 20; // upload part size: bounded memory on both ends, retryable

// The bucket settings the S3 gateway keeps, by attribute: title and the
// aws CLI call that sets them.
const BUCKET_SETTINGS = [
  ['user.s3.object-lock', 'Object lock', 's3api put-object-lock-configuration'],
  ['user.s3.lifecycle', 'Lifecycle rules', 's3api put-bucket-lifecycle-configuration'],
  ['user.s3.policy', 'Bucket policy', 's3api put-bucket-policy'],
  ['user.s3.public-access-block', 'Public access block', 's3api put-public-access-block'],
  ['user.s3.acl', 'ACL', 's3api put-bucket-acl'],
  ['user.s3.ownership', 'Object ownership', 's3api put-bucket-ownership-controls'],
  ['user.s3.cors', 'CORS rules', 's3api put-bucket-cors'],
  ['user.s3.encryption', 'Default encryption', 's3api put-bucket-encryption'],
  ['user.s3.tagging', 'Tags', 's3api put-bucket-tagging'],
];

export function joinPath(dir, name) { return (dir === '/' ? '' : dir) + '/' + name; }

const SORTS = [['natural', 'Name'], ['name', 'Name (byte order)'], ['size', 'Size'], ['mtime', 'Modified']];

export function nsPage(root, params) {
  const path = params.get('path') || '/';
  // The listing's view lives in the URL: sort, order, search and page.
  const view = {
    sort: SORTS.some(([v]) => v === params.get('sort')) ? params.get('sort') : 'natural',
    order: params.get('order') === 'desc' ? 'desc' : 'asc',
    q: params.get('q') || '',
    page: Math.max(1, parseInt(params.get('page') || '1', 10) || 1),
  };
  const go = (changes) => {
    const v = { ...view, ...changes };
    const p = { path };
    if (v.sort !== 'natural') p.sort = v.sort;
    if (v.order !== 'asc') p.order = v.order;
    if (v.q) p.q = v.q;
    if (v.page > 1) p.page = v.page;
    location.hash = '#/ns?' + api.q(p);
  };
  const search = h('input', { id: 'ns-search', type: 'search', placeholder: 'search names here', value: view.q, size: 22 });
  search.addEventListener('keydown', (ev) => { if (ev.key === 'Enter') go({ q: search.value.trim(), page: 1 }); });
  const sortSel = h('select', { id: 'ns-sort' }, SORTS.map(([v, label]) => { const o = h('option', { value: v }, label); o.selected = v === view.sort; return o; }));
  sortSel.addEventListener('change', () => go({ sort: sortSel.value, page: 1 }));
  const orderBtn = h('button', { class: 'secondary small', id: 'ns-order', type: 'button', onclick: () => go({ order: view.order === 'asc' ? 'desc' : 'asc', page: 1 }) },
    view.order === 'asc' ? '↑ ascending' : '↓ descending');
  const total = h('span', { class: 'muted', id: 'ns-total' });
  const crumbs = h('div', { class: 'crumbs', id: 'crumbs' });
  const msg = h('p', { class: 'error', id: 'ns-error', role: 'alert' });
  const tbody = h('tbody');
  const pager = h('div', { class: 'pager' });
  const pagerBottom = h('div', { class: 'pager', id: 'pager-bottom' }); // a long page's end has one too
  const uploadsEl = h('div', { class: 'uploads', id: 'uploads' });
  const details = h('div', { class: 'details', id: 'details' });
  const fileInput = h('input', { type: 'file', multiple: true, hidden: true, id: 'upload-input' });
  fileInput.addEventListener('change', () => { for (const f of fileInput.files) upload(f); fileInput.value = ''; });
  // Multi-select: a box per row (in its last cell) and one for the page.
  const selectAll = h('input', { type: 'checkbox', id: 'select-all', title: 'select every entry of this page' });
  const delSel = h('button', { class: 'danger', id: 'delete-selected', disabled: true, onclick: () => removeSelected() }, 'Delete selected');
  // Several entries download as one zip archive (directories with their
  // trees), streamed by the server: a link, so the browser saves it as it
  // comes instead of holding it in memory.
  const dlSel = h('a', { id: 'download-selected', class: 'button secondary disabled', download: '' }, 'Download selected');
  const selected = () => [...tbody.querySelectorAll('input.sel:checked')].map(b => b.closest('tr'));
  const updateSel = () => {
    const rows = selected(), n = rows.length;
    delSel.disabled = n === 0;
    delSel.textContent = n ? `Delete ${n} selected` : 'Delete selected';
    dlSel.classList.toggle('disabled', n === 0);
    dlSel.textContent = n ? `Download ${n} selected (zip)` : 'Download selected';
    if (n) dlSel.href = '/api/fs/archive?' + new URLSearchParams([['dir', path], ...rows.map(tr => ['name', tr.dataset.name])]);
    else dlSel.removeAttribute('href');
  };
  selectAll.addEventListener('change', () => { tbody.querySelectorAll('input.sel').forEach(b => { b.checked = selectAll.checked; }); updateSel(); });
  tbody.addEventListener('change', (ev) => { if (ev.target.classList.contains('sel')) updateSel(); });
  const table = h('div', { class: 'table-wrap dropzone', id: 'dropzone' }, h('table', { id: 'listing' },
    h('thead', {}, h('tr', {}, h('th', {}, 'Name'), h('th', {}, 'Type'), h('th', { class: 'num' }, 'Size'), h('th', {}, 'Mode'), h('th', {}, 'Modified'), h('th', {}, selectAll))),
    tbody));
  root.append(h('h1', {}, 'Namespace'), crumbs,
    h('div', { class: 'toolbar' },
      h('button', { id: 'mkdir-btn', onclick: mkdir }, 'New directory'),
      h('button', { id: 'upload-btn', class: 'secondary', onclick: () => fileInput.click() }, 'Upload files'), fileInput,
      h('button', { class: 'secondary', onclick: () => reload() }, 'Refresh'), dlSel, delSel,
      h('span', { class: 'muted' }, 'or drop files on the list'),
      h('span', { class: 'spacer' }), pager),
    h('div', { class: 'toolbar' }, search, sortSel, orderBtn, total),
    msg, uploadsEl, table, pagerBottom, details);

  // Breadcrumbs: each component is a link built from text, never markup.
  const parts = path.split('/').filter(Boolean);
  const links = [h('a', { href: '#/ns?' + api.q({ path: '/' }) }, '/')];
  parts.forEach((p, i) => {
    if (i > 0) links.push(h('span', { class: 'sep' }, '/'));
    links.push(h('a', { href: '#/ns?' + api.q({ path: '/' + parts.slice(0, i + 1).join('/') }) }, p));
  });
  replace(crumbs, links);

  // Sorted listings page by offset (the page is in the URL); a directory too
  // large to sort pages by cursor in name order: pages[i] is the name page i
  // starts after.
  const pages = [''];
  let pageNo = 0;
  let sorted = true;

  async function load(after) {
    if (sorted) {
      try {
        const r = await api.get('/api/fs/list?' + api.q({ path, sort: view.sort, order: view.order, q: view.q, offset: (view.page - 1) * PAGE, limit: PAGE }));
        msg.textContent = '';
        const pagesAll = Math.max(1, Math.ceil(r.total / PAGE));
        total.textContent = view.q ? `${r.total.toLocaleString()} matching “${view.q}”` : `${r.total.toLocaleString()} entries`;
        replace(tbody, r.entries.map(row));
        selectAll.checked = false;
        updateSel();
        if (r.entries.length === 0) replace(tbody, h('tr', {}, h('td', { colspan: 6, class: 'muted' }, view.q ? 'Nothing matches.' : 'This directory is empty.')));
        const controls = (suffix) => [
          h('button', { class: 'secondary small', disabled: view.page <= 1, onclick: () => go({ page: view.page - 1 }) }, '‹ Previous'),
          h('span', {}, `page ${view.page} of ${pagesAll}`),
          h('button', { class: 'secondary small', disabled: !r.more, id: 'next-page' + suffix, onclick: () => go({ page: view.page + 1 }) }, 'Next ›')];
        replace(pager, controls(''));
        replace(pagerBottom, r.entries.length > 20 || view.page > 1 ? controls('-bottom') : []);
        return;
      } catch (err) {
        if (!(err instanceof api.ApiError) || err.code !== 'too_large') { msg.textContent = err.message; return; }
        sorted = false; // too large to sort: name order, by cursor
        total.textContent = 'too many entries to sort or search: name order';
        search.disabled = sortSel.disabled = orderBtn.disabled = true;
      }
    }
    try {
      const r = await api.get('/api/fs/list?' + api.q({ path, after, limit: PAGE }));
      msg.textContent = '';
      replace(tbody, r.entries.map(row));
      selectAll.checked = false;
      updateSel();
      if (r.entries.length === 0) replace(tbody, h('tr', {}, h('td', { colspan: 6, class: 'muted' }, 'This directory is empty.')));
      const controls = (suffix) => [
        h('button', { class: 'secondary small', disabled: pageNo === 0, onclick: () => { pageNo--; reload(); } }, '‹ Previous'),
        h('span', {}, `page ${pageNo + 1}`),
        h('button', { class: 'secondary small', disabled: !r.more, id: 'next-page' + suffix, onclick: () => { pages[pageNo + 1] = r.next; pageNo++; load(r.next); } }, 'Next ›')];
      replace(pager, controls(''));
      replace(pagerBottom, r.entries.length > 20 || pageNo > 0 ? controls('-bottom') : []);
    } catch (err) {
      msg.textContent = err.message;
    }
  }

  function row(e) {
    const full = joinPath(path, e.name);
    const nameEl = e.type === 'dir'
      ? h('a', { class: 'name-link', href: '#/ns?' + api.q({ path: full }) }, e.name + '/')
      : h('a', { class: 'name-link', href: '#', onclick: (ev) => { ev.preventDefault(); showDetails(full); } }, e.name);
    return h('tr', { dataset: { name: e.name } },
      h('td', {}, nameEl), h('td', {}, e.type), h('td', { class: 'num' }, e.type === 'file' ? fmtBytes(e.size) : ''),
      h('td', { class: 'mono' }, e.mode || ''), h('td', {}, fmtTime(e.mtime)),
      h('td', {},
        h('button', { class: 'secondary small', onclick: () => showDetails(full) }, 'Details'), ' ',
        e.type === 'file' ? h('a', { href: '/api/fs/download?' + api.q({ path: full }), download: e.name }, h('button', { class: 'secondary small', type: 'button' }, 'Download')) : null, ' ',
        h('button', { class: 'secondary small', dataset: { action: 'rename' }, onclick: () => rename(full, e) }, 'Rename/move'), ' ',
        h('button', { class: 'danger small', dataset: { action: 'delete' }, onclick: () => remove(full, e) }, 'Delete'), ' ',
        h('input', { type: 'checkbox', class: 'sel', title: 'select ' + e.name, dataset: { type: e.type } })));
  }

  // removeSelected deletes the checked entries, directories with
  // everything in them, one after the other, and says what failed.
  async function removeSelected() {
    const rows = selected();
    if (!rows.length) return;
    const names = rows.map(tr => tr.dataset.name);
    const dirs = rows.filter(tr => tr.querySelector('input.sel').dataset.type === 'dir').length;
    const list = names.slice(0, 10).join(', ') + (names.length > 10 ? `, and ${names.length - 10} more` : '');
    const ok = await confirmDialog(`Delete ${names.length} entries?`,
      `This deletes ${list} from ${path}` + (dirs ? `; the ${dirs} director${dirs === 1 ? 'y goes' : 'ies go'} with everything in them` : '') + '. This cannot be undone.', 'Delete');
    if (!ok) return;
    const failed = [];
    for (const tr of rows) {
      const dir = tr.querySelector('input.sel').dataset.type === 'dir';
      try {
        await api.post('/api/fs/delete', { path: joinPath(path, tr.dataset.name), recursive: dir });
      } catch (err) { failed.push(`${tr.dataset.name}: ${err.message}`); }
    }
    msg.textContent = failed.length ? `${failed.length} not deleted: ${failed.join('; ')}` : '';
    selectAll.checked = false;
    replace(details);
    reload();
    updateSel();
  }

  async function showDetails(full) {
    try {
      const s = await api.get('/api/fs/stat?' + api.q({ path: full }));
      const dl = [];
      const item = (k, v) => dl.push(h('dt', {}, k), h('dd', {}, v));
      item('Path', s.path); item('Type', s.type); item('Inode', String(s.ino));
      if (s.type === 'file') { item('Size', `${fmtBytes(s.size)} (${s.size} bytes)`); item('ETag', s.etag); }
      item('Owner', `uid ${s.uid}, gid ${s.gid}`); item('Mode', s.mode); item('Links', String(s.nlink));
      item('Modified', fmtTime(s.mtime)); item('Changed', fmtTime(s.ctime)); item('Accessed', fmtTime(s.atime));
      item('Generation', String(s.gen));
      if (s.symlinkTarget) item('Link target', s.symlinkTarget);
      if (s.implicit) item('Implicit', 'made by an S3 upload; removed when empty');
      if (s.layout) {
        const l = s.layout;
        item('Layout', `chunk size ${fmtBytes(l.chunkSize)}, stripe ${l.stripe}, chain table ${l.table}` + (l.tableVersion ? ` v${l.tableVersion}` : ''));
        if (l.chains.length) item('Chains', l.chains.join(', '));
        if (l.error) item('Chains', l.error);
      }
      const meta = Object.entries(s.userMetadata);
      item('User metadata', meta.length ? h('div', {}, meta.map(([k, v]) => h('div', { class: 'mono' }, `${k}: ${v}`))) : 'none');
      item('Extended attributes', s.xattrs.length ? h('div', {}, s.xattrs.map(x => h('div', { class: 'mono' }, `${x.name} = ${x.value}` + (x.encoding === 'base64' ? ' (base64)' : '')))) : 'none');
      const extra = [];
      const bucket = s.type === 'dir' && s.path.split('/').length === 2;
      if (bucket) {
        extra.push(bucketSettings(s));
        item('Versioning', s.versioning || 'never enabled');
        const want = s.versioning === 'Enabled' ? 'Suspended' : 'Enabled';
        extra.push(h('p', {}, h('button', { class: 'secondary small', dataset: { action: 'versioning' }, onclick: () => setVersioning(s.path, want) },
          want === 'Enabled' ? 'Enable versioning' : 'Suspend versioning')));
      } else if (s.versioning) {
        item('Versioning', s.versioning);
        if (s.versionId) item('Version', s.versionId);
      }
      if (s.locked) item('Object lock', s.locked);
      if (s.type === 'file' && s.size > 0) extra.push(await preview(s.path));
      if (s.type === 'file' && s.versioning) extra.push(await versionsTable(s.path));
      replace(details, h('div', { class: 'card' }, h('h2', {}, s.name), h('dl', {}, dl), ...extra));
      details.scrollIntoView({ behavior: 'smooth', block: 'nearest' });
    } catch (err) {
      msg.textContent = err.message;
    }
  }

  // bucketSettings shows what the S3 API set on a bucket (kept as the
  // bucket directory's user.s3.* attributes, docs/s3-mapping.md), each
  // under its S3 name with the call that changes it; values are shown as
  // stored, JSON indented.
  function bucketSettings(s) {
    const byName = new Map(s.xattrs.map(x => [x.name, x]));
    const rows = BUCKET_SETTINGS.map(([attr, title, call]) => {
      const x = byName.get(attr);
      let value = 'not set';
      if (x && x.encoding !== 'base64') {
        try { value = JSON.stringify(JSON.parse(x.value), null, 2); } catch { value = x.value; }
      } else if (x) {
        value = x.value + ' (base64)';
      }
      return h('tr', { dataset: { setting: attr }, class: x ? '' : 'muted' }, h('td', {}, title),
        h('td', {}, x ? h('pre', { class: 'setting' }, value) : value), h('td', { class: 'mono small' }, call));
    });
    return h('div', { id: 'bucket-settings' }, h('h3', {}, 'Bucket settings (S3)'),
      h('div', { class: 'table-wrap' }, h('table', {}, h('thead', {}, h('tr', {}, h('th', {}, 'Setting'), h('th', {}, 'Value'), h('th', {}, 'Changed with'))),
        h('tbody', {}, rows))));
  }

  // preview shows the start of a text file, or a small image; the server
  // decides which from the bytes, and the page only ever shows them as
  // text or as an image.
  async function preview(full) {
    try {
      const p = await api.get('/api/fs/preview?' + api.q({ path: full }));
      if (p.kind === 'text') {
        return h('div', {}, h('h3', {}, 'Preview' + (p.truncated ? ' (the start)' : '')), h('pre', { class: 'preview', id: 'preview-text' }, p.text));
      }
      if (p.kind === 'image') {
        return h('div', {}, h('h3', {}, 'Preview'), h('img', { class: 'preview', id: 'preview-image', alt: full.split('/').pop(), src: p.dataURL }));
      }
      return h('p', { class: 'muted' }, `No preview (${p.type}).`);
    } catch (err) {
      return h('p', { class: 'muted' }, 'No preview: ' + err.message);
    }
  }

  // versionsTable lists a file's versions, newest first, each with a
  // download and (for an older one) a restore.
  async function versionsTable(full) {
    const v = await api.get('/api/fs/versions?' + api.q({ path: full }));
    const rows = v.versions.map(x => h('tr', { dataset: { version: x.id } },
      h('td', { class: 'mono' }, x.id),
      h('td', {}, x.deleteMarker ? 'delete marker' : x.current ? 'current' : 'noncurrent'),
      h('td', { class: 'num' }, x.deleteMarker ? '' : fmtBytes(x.size)),
      h('td', {}, fmtTime(x.modified)),
      h('td', {}, x.locked || ''),
      h('td', {},
        x.deleteMarker ? null : h('a', { href: '/api/fs/download?' + api.q({ path: full, version: x.id }), download: full.split('/').pop() },
          h('button', { class: 'secondary small', type: 'button' }, 'Download')), ' ',
        x.deleteMarker || x.current ? null : h('button', { class: 'secondary small', dataset: { action: 'restore' }, onclick: () => restoreVersion(full, x.id) }, 'Restore'))));
    return h('div', {}, h('h3', {}, `Versions (${v.versions.length})`),
      h('div', { class: 'table-wrap' }, h('table', { class: 'versions' },
        h('thead', {}, h('tr', {}, ['Version', 'State', 'Size', 'Modified', 'Lock', ''].map(t => h('th', {}, t)))),
        h('tbody', {}, rows))));
  }

  async function restoreVersion(full, id) {
    const ok = await confirmDialog('Restore this version?', `This makes a copy of version ${id} the current ${full}; the current version is kept as an older one.`, 'Restore');
    if (!ok) return;
    try {
      await api.post('/api/fs/versions/restore', { path: full, id });
      msg.textContent = `Restored ${full} from version ${id}.`;
      showDetails(full);
      reload();
    } catch (err) { msg.textContent = err.message; }
  }

  async function setVersioning(full, state) {
    const what = state === 'Enabled'
      ? `From now on every overwrite and delete in ${full}, through S3 or the mount, keeps the previous version (they take space until deleted). A bucket never returns to unversioned; it can be suspended.`
      : `New overwrites and deletes in ${full} stop keeping versions (the versions kept so far stay).`;
    const ok = await confirmDialog(state === 'Enabled' ? 'Enable versioning?' : 'Suspend versioning?', what, state === 'Enabled' ? 'Enable' : 'Suspend');
    if (!ok) return;
    try {
      await api.post('/api/fs/versioning', { path: full, versioning: state });
      showDetails(full);
    } catch (err) { msg.textContent = err.message; }
  }

  async function mkdir() {
    const input = h('input', { id: 'mkdir-name', placeholder: 'name', required: true });
    if (!await dialog('New directory in ' + path, [h('label', {}, 'Name', input)], { okText: 'Create' })) return;
    try {
      await api.post('/api/fs/mkdir', { path: joinPath(path, input.value) });
      reload();
    } catch (err) { msg.textContent = err.message; }
  }

  async function rename(full, e) {
    const input = h('input', { id: 'rename-to', value: full, size: 50 });
    if (!await dialog(`Rename or move ${e.name}`, [h('p', {}, 'New path (the move is atomic; a directory moves with everything in it):'), input], { okText: 'Rename' })) return;
    try {
      await api.post('/api/fs/rename', { from: full, to: input.value.trim() });
      reload();
    } catch (err) { msg.textContent = err.message; }
  }

  async function remove(full, e) {
    const dir = e.type === 'dir';
    let what = `This deletes ${full}. This cannot be undone.`;
    if (dir) {
      // Say how much goes: the server counts the tree (up to a bound).
      let n = null;
      try { n = await api.get('/api/fs/count?' + api.q({ path: full })); } catch (_) { /* said without the figures */ }
      what = n === null
        ? `This deletes the directory ${full} and everything in it. This cannot be undone.`
        : n.files + n.dirs === 0
          ? `This deletes the empty directory ${full}.`
          : `This deletes the directory ${full} and the ${n.complete ? '' : 'more than '}${n.files.toLocaleString()} file(s) and ${n.dirs.toLocaleString()} directorie(s) in it (${n.complete ? '' : 'over '}${fmtBytes(n.bytes)}). This cannot be undone.`;
    }
    const ok = await confirmDialog(`Delete ${e.name}?`, what, 'Delete');
    if (!ok) return;
    try {
      await api.post('/api/fs/delete', { path: full, recursive: dir });
      replace(details);
      reload();
    } catch (err) { msg.textContent = err.message; }
  }

  // upload sends a file in parts; the server streams each part into a
  // hidden staging file and renames it into place at the end.
  async function upload(file) {
    // An upload over an existing name replaces it: ask first.
    try {
      const s = await api.get('/api/fs/stat?' + api.q({ path: joinPath(path, file.name) }));
      const about = s.type === 'file' ? ` (${fmtBytes(s.size)}, modified ${fmtTime(s.mtime)})` : ` (a ${s.type})`;
      if (!await confirmDialog(`Replace ${file.name}?`, `${joinPath(path, file.name)} exists${about}. Uploading replaces it with ${file.name} (${fmtBytes(file.size)}).`, 'Replace')) return;
    } catch (err) {
      if (!(err instanceof api.ApiError) || err.status !== 404) { msg.textContent = err.message; return; }
    }
    const bar = h('div');
    const status = h('span', {}, 'starting…');
    const rowEl = h('div', { class: 'upload-row', dataset: { name: file.name } }, h('span', {}, file.name), h('div', { class: 'progress' }, bar), status);
    uploadsEl.append(rowEl);
    const show = (done) => {
      const pct = file.size ? 100 * done / file.size : 100;
      bar.style.width = pct.toFixed(1) + '%';
      status.textContent = `${fmtBytes(done)} of ${fmtBytes(file.size)}`;
    };
    let up = null;
    try {
      up = await api.post('/api/fs/uploads', { path: joinPath(path, file.name), size: file.size });
      const part = Math.min(PART, up.maxPartBytes || PART);
      for (let off = 0; off < file.size; off += part) {
        const blob = file.slice(off, Math.min(file.size, off + part));
        let tries = 0;
        for (;;) {
          try {
            await api.putPart(`/api/fs/uploads/${encodeURIComponent(up.id)}?offset=${off}`, blob, (n) => show(off + n));
            break;
          } catch (err) {
            if (++tries >= 3 || (err.status >= 400 && err.status < 500)) throw err;
          }
        }
      }
      await api.post(`/api/fs/uploads/${encodeURIComponent(up.id)}/complete`);
      show(file.size);
      status.textContent = 'done';
      rowEl.dataset.done = 'true';
      reload();
      setTimeout(() => rowEl.remove(), 4000);
    } catch (err) {
      status.textContent = 'failed: ' + err.message;
      status.className = 'error';
      if (up) api.del(`/api/fs/uploads/${encodeURIComponent(up.id)}`).catch(() => {});
    }
  }

  table.addEventListener('dragover', (e) => { e.preventDefault(); table.classList.add('over'); });
  table.addEventListener('dragleave', () => table.classList.remove('over'));
  table.addEventListener('drop', (e) => {
    e.preventDefault();
    table.classList.remove('over');
    for (const f of e.dataTransfer.files) upload(f);
  });

  function reload() { load(pages[pageNo]); }

  load('');
  return { stop() {} };
}
