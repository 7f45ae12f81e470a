// DOM helpers. Text always goes in through textContent (or text nodes):
// nothing a user or the cluster supplies is ever parsed as HTML.

// h builds an element: h('td', {class: 'num'}, 'text', childNode, ...).
// Attributes starting with "on" take functions and become listeners.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
}

export function clear(el) { while (el.firstChild) el.removeChild(el.firstChild); return el; }

export function replace(el, ...children) { clear(el); append(el, children); return el; }

export function badge(state, text) { return h('span', { class: 'badge ' + state }, text || state); }

export function fmtBytes(n) {
  if (n === null || n === undefined) return '–';
  const neg = n < 0; n = Math.abs(n);
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB'];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (neg ? '-' : '') + (i === 0 ? n.toFixed(0) : n.toFixed(1)) + ' ' + u[i];
}

export function fmtNum(n, digits = 0) {
  if (n === null || n === undefined) return '–';
  return Number(n).toLocaleString(undefined, { maximumFractionDigits: digits });
}

export function fmtAgo(iso) {
  if (!iso) return 'never';
  const s = (Date.now() - Date.parse(iso)) / 1000;
  if (s < 1) return 'just now';
  if (s < 90) return s.toFixed(0) + ' s ago';
  if (s < 5400) return (s / 60).toFixed(0) + ' min ago';
  return (s / 3600).toFixed(1) + ' h ago';
}

export function fmtTime(iso) {
  if (!iso) return '–';
  return new Date(iso).toLocaleString();
}

export function fmtDuration(sec) {
  if (sec === null || sec === undefined || !isFinite(sec)) return '–';
  if (sec < 90) return sec.toFixed(0) + ' s';
  if (sec < 5400) return (sec / 60).toFixed(0) + ' min';
  return (sec / 3600).toFixed(1) + ' h';
}

// dialog shows the shared <dialog> with a title and body nodes; it resolves
// true when OK is pressed. okText/okClass style the OK button; noCancel
// hides Cancel (an information dialog).
export function dialog(title, body, { okText = 'OK', okClass = '', noCancel = false } = {}) {
  const dlg = document.getElementById('dialog');
  replace(document.getElementById('dialog-title'), title);
  replace(document.getElementById('dialog-body'), body);
  const ok = document.getElementById('dialog-ok');
  ok.textContent = okText;
  ok.className = okClass;
  document.getElementById('dialog-cancel').hidden = noCancel;
  dlg.returnValue = '';
  return new Promise(resolve => {
    dlg.addEventListener('close', () => resolve(dlg.returnValue === 'ok'), { once: true });
    dlg.showModal();
  });
}

export function confirmDialog(title, text, okText, danger = true) {
  return dialog(title, [h('p', {}, text)], { okText, okClass: danger ? 'danger' : '' });
}
