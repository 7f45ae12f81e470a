// The JSON API client: adds the CSRF token to state-changing calls, turns
// error answers into ApiError, and tells the app when the cluster or the
// console itself cannot be reached (banner) or the session ended (sign-in).

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

let csrf = '';
const listeners = { unauthorized: [], connection: [] };

export function on(event, fn) { listeners[event].push(fn); }
function emit(event, ...args) { for (const fn of listeners[event]) fn(...args); }

export function setCSRF(token) { csrf = token || ''; }

// call sends a request; body (if any) is sent as JSON unless it is a Blob.
export async function call(method, path, body, { raw = false } = {}) {
  const opts = { method, headers: {}, credentials: 'same-origin' };
  if (method !== 'GET' && method !== 'HEAD') opts.headers['X-CSRF-Token'] = csrf;
  if (body !== undefined) {
    opts.headers['Content-Type'] = 'application/json';
    opts.body = JSON.stringify(body);
  }
  let resp;
  try {
    resp = await fetch(path, opts);
  } catch (e) {
    emit('connection', false, 'The console server does not answer (' + e.message + '). Retrying…');
    throw new ApiError(0, 'network', 'the console server does not answer');
  }
  if (raw) return resp;
  let data = null;
  const ct = resp.headers.get('Content-Type') || '';
  if (ct.startsWith('application/json')) data = await resp.json().catch(() => null);
  if (resp.ok) {
    emit('connection', true);
    return data;
  }
  const code = data && data.code || 'http_' + resp.status;
  const msg = data && data.error || resp.statusText;
  if (resp.status === 401 && path !== '/api/session') emit('unauthorized');
  if (code === 'cluster_unavailable') emit('connection', false, 'Lost the connection to the cluster: ' + msg);
  else emit('connection', true);
  throw new ApiError(resp.status, code, msg);
}

export const get = (path) => call('GET', path);
export const post = (path, body) => call('POST', path, body === undefined ? {} : body);
export const put = (path, body) => call('PUT', path, body);
export const del = (path) => call('DELETE', path);

// putPart sends one upload part with XMLHttpRequest (fetch cannot report
// upload progress); onProgress gets the bytes of this part sent so far.
export function putPart(url, blob, onProgress) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('PUT', url);
    xhr.setRequestHeader('X-CSRF-Token', csrf);
    xhr.setRequestHeader('Content-Type', 'application/octet-stream');
    xhr.upload.onprogress = (e) => onProgress(e.loaded);
    xhr.onload = () => {
      let data = null;
      try { data = JSON.parse(xhr.responseText); } catch (_) { /* not JSON */ }
      if (xhr.status >= 200 && xhr.status < 300) resolve(data);
      else {
        if (xhr.status === 401) emit('unauthorized');
        reject(new ApiError(xhr.status, data && data.code || 'http_' + xhr.status, data && data.error || xhr.statusText));
      }
    };
    xhr.onerror = () => reject(new ApiError(0, 'network', 'the upload connection failed'));
    xhr.send(blob);
  });
}

export function q(params) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') u.set(k, v);
  return u.toString();
}
