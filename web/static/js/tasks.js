// Cluster tasks: collect removed files now, check the namespace (fsck).
import * as api from './api.js';
import { h, replace, badge, fmtBytes, confirmDialog } from './dom.js';

export function tasksPage(root) {
  const msg = h('p', { class: 'error', role: 'alert' });
  const gcOut = h('div', { id: 'gc-result' });
  const gcQueue = h('p', { id: 'gc-queue' });
  const fsckOut = h('div', { id: 'fsck-result' });
  const noGrace = h('input', { type: 'checkbox', id: 'gc-no-grace' });
  root.append(h('h1', {}, 'Tasks'), msg,
    h('div', { class: 'card' }, h('h2', {}, 'Garbage collection'),
      h('p', { class: 'muted' }, 'Removed files keep their chunks for the grace period (metad --gc-grace), so readers that have them open keep reading; metad collects them on its own after it. Collect now to free their space at once.'),
      gcQueue,
      h('p', {}, h('label', { class: 'check' }, noGrace, 'also files still in their grace period (a reader that has one open loses it)')),
      h('p', {}, h('button', { id: 'gc-run', onclick: collect }, 'Collect now')), gcOut),
    h('div', { class: 'card' }, h('h2', {}, 'Namespace check (fsck)'),
      h('p', { class: 'muted' }, 'Reads the whole namespace at one moment and checks its invariants (links, directories, the GC queue, versions). It takes a few seconds on a large namespace and changes nothing.'),
      h('p', {}, h('button', { id: 'fsck-run', onclick: fsck }, 'Run fsck')), fsckOut));

  // The queue, every few seconds: a collection running shows as it shrinks.
  async function queue() {
    try {
      const q = await api.get('/api/tasks/gc');
      const grace = q.graceSeconds > 0 ? `their grace period of ${fmtDuration(q.graceSeconds)}` : 'no grace period';
      gcQueue.textContent = q.entries === 0 ? 'The GC queue is empty.'
        : `${q.entries.toLocaleString()} removed file(s) or tree(s) queued, ${fmtBytes(q.bytes)}: ` +
          `${q.due.toLocaleString()} due now (${fmtBytes(q.dueBytes)}), the rest within ${grace}.`;
    } catch (err) { gcQueue.textContent = ''; }
  }

  async function collect() {
    if (noGrace.checked && !await confirmDialog('Collect files still in their grace period?', 'A program that has such a file open loses it.', 'Collect')) return;
    replace(gcOut, h('p', { class: 'muted' }, 'Collecting…'));
    try {
      const r = await api.post('/api/tasks/gc', { noGrace: noGrace.checked });
      msg.textContent = '';
      replace(gcOut, h('p', {}, `Freed ${r.files.toLocaleString()} file(s), ${fmtBytes(r.bytes)}; ${r.queueLeft.toLocaleString()} entrie(s) still queued.`));
      queue();
    } catch (err) { replace(gcOut); msg.textContent = err.message; }
  }

  async function fsck() {
    replace(fsckOut, h('p', { class: 'muted' }, 'Checking…'));
    try {
      const r = await api.post('/api/tasks/fsck', {});
      msg.textContent = '';
      replace(fsckOut, h('div', {},
        h('p', {}, r.problems.length ? badge('failed', `${r.problems.length} problem(s)`) : badge('ok', 'clean'), ' ', r.summary.split(':')[0]),
        r.problems.length ? h('ul', {}, r.problems.map(p => h('li', { class: 'mono' }, p))) : null));
    } catch (err) { replace(fsckOut); msg.textContent = err.message; }
  }
  queue();
  const timer = setInterval(queue, 3000);
  return { stop() { clearInterval(timer); } };
}

function fmtDuration(s) {
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  return `${(s / 3600).toFixed(s % 3600 ? 1 : 0)} h`;
}
