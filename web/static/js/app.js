// The console's shell: sign-in, navigation between pages (by URL hash), the
// connection banner, sign-out.
import * as api from './api.js';
import { replace } from './dom.js';
import { overviewPage } from './overview.js';
import { auditPage } from './audit.js';
import { trashPage } from './trash.js';
import { tasksPage } from './tasks.js';
import { chainsPage } from './chains.js';
import { nsPage } from './browser.js';
import { keysPage } from './keys.js';
import { clientsPage } from './clients.js';
import { snapshotsPage } from './snapshots.js';

const pages = { overview: overviewPage, chains: chainsPage, ns: nsPage, keys: keysPage, audit: auditPage, trash: trashPage, tasks: tasksPage, clients: clientsPage, snapshots: snapshotsPage };
const $ = (id) => document.getElementById(id);
let current = null; // { stop() } of the page shown
let signedIn = false;

function showBanner(ok, msg) {
  const b = $('banner');
  // While the console cannot reach its server or the cluster, what the page
  // shows is old: grey it out rather than let "alive, just now" stand.
  document.body.classList.toggle('stale', !ok);
  if (ok) { b.hidden = true; return; }
  b.textContent = msg;
  b.hidden = false;
}

api.on('connection', showBanner);
api.on('unauthorized', () => { if (signedIn) showSignIn('Your session has ended; sign in again.'); });

function stopPage() {
  if (current && current.stop) current.stop();
  current = null;
}

// showSignIn shows the sign-in form alone: msg is an error unless info.
function showSignIn(msg, info = false) {
  signedIn = false;
  stopPage();
  replace($('page'));
  $('top').hidden = true;
  $('who').textContent = ''; // the last user's key name goes with the chrome
  $('signin').hidden = false;
  $('signin-error').textContent = msg || '';
  $('signin-error').classList.toggle('info', info);
  $('signin-access').focus();
}

function showApp(sess) {
  signedIn = true;
  api.setCSRF(sess.csrfToken);
  $('who').textContent = sess.accessKey;
  $('signin').hidden = true;
  $('top').hidden = false;
  route();
}

// route shows the page the hash names: #/page?query.
function route() {
  if (!signedIn) return;
  const hash = location.hash.replace(/^#\/?/, '') || 'overview';
  const [name, query] = hash.split('?');
  const page = pages[name] ? name : 'overview';
  for (const a of document.querySelectorAll('#nav a')) a.classList.toggle('active', a.dataset.page === page);
  stopPage();
  const root = replace($('page'));
  current = pages[page](root, new URLSearchParams(query || ''));
}

window.addEventListener('hashchange', route);

$('signin-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const btn = $('signin-submit');
  btn.disabled = true;
  try {
    const sess = await api.call('POST', '/api/session', { accessKey: $('signin-access').value.trim(), secretKey: $('signin-secret').value });
    $('signin-secret').value = '';
    showApp(sess);
  } catch (err) {
    $('signin-error').textContent = err.message;
  } finally {
    btn.disabled = false;
  }
});

$('signout').addEventListener('click', async () => {
  try { await api.del('/api/session'); } catch (_) { /* signed out anyway */ }
  api.setCSRF('');
  showSignIn('Signed out.', true);
});

(async function start() {
  try {
    showApp(await api.get('/api/session'));
  } catch (err) {
    showSignIn(err.status === 401 ? '' : err.message);
  }
})();
