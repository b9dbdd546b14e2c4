// The public HTTP API, as a backend calls it. Every failure becomes an ApiError carrying the
// API's own {code, message, details}, so views can show it; nothing is swallowed here.

const USER_KEY = 'console.uid';

export class ApiError extends Error {
  constructor(status, code, message, details) {
    super(`${code}: ${message}`);
    this.status = status;
    this.code = code;
    this.apiMessage = message;
    this.details = details;
  }
}

export function currentUser() {
  return localStorage.getItem(USER_KEY) || 'alice';
}

export function setUser(uid) {
  localStorage.setItem(USER_KEY, uid);
  const seen = knownUsers().filter((u) => u !== uid);
  localStorage.setItem(`${USER_KEY}s`, JSON.stringify([uid, ...seen].slice(0, 10)));
}

export function knownUsers() {
  try {
    const list = JSON.parse(localStorage.getItem(`${USER_KEY}s`) || '[]');
    return Array.isArray(list) ? list.filter((u) => typeof u === 'string') : [];
  } catch {
    return [];
  }
}

function headers(auth, body) {
  const out = {};
  if (auth) out.Authorization = `Bearer dev:${currentUser()}`;
  if (body !== undefined) out['Content-Type'] = 'application/json';
  return out;
}

async function errorOf(resp) {
  const text = await resp.text();
  let body = null;
  try {
    body = JSON.parse(text);
  } catch {
    body = null;
  }
  const err = body && typeof body === 'object' ? body.error : null;
  if (err && typeof err.code === 'string') return new ApiError(resp.status, err.code, err.message || '', err.details);
  return new ApiError(resp.status, `HTTP_${resp.status}`, text.slice(0, 500) || resp.statusText || 'no body');
}

async function send(method, path, {body, auth = true, signal} = {}) {
  let resp;
  try {
    resp = await fetch(path, {
      method, signal, headers: headers(auth, body),
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (exc) {
    if (exc.name === 'AbortError') throw exc;
    throw new ApiError(0, 'NETWORK_ERROR', `could not reach the server (${exc.message})`);
  }
  if (!resp.ok) throw await errorOf(resp);
  return resp;
}

/** A JSON route: the parsed body of a 2xx answer, or an ApiError. */
export async function callJson(method, path, options = {}) {
  const resp = await send(method, path, options);
  try {
    return await resp.json();
  } catch (exc) {
    throw new ApiError(resp.status, 'INVALID_RESPONSE', `the answer was not JSON (${exc.message})`);
  }
}

/**
 * An NDJSON route: calls onEvent for each line as it arrives (fetch + ReadableStream). Heartbeats
 * (`{"type":"heartbeat"}`, sent while a followed run is quiet) only keep the connection: not passed on.
 */
export async function streamNdjson(method, path, onEvent, options = {}) {
  const resp = await send(method, path, options);
  const reader = resp.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  const emit = (line) => {
    if (!line.trim()) return;
    let event;
    try {
      event = JSON.parse(line);
    } catch (exc) {
      throw new ApiError(resp.status, 'INVALID_EVENT', `a stream line was not JSON (${exc.message})`);
    }
    if (event.type === 'heartbeat') return;
    onEvent(event);
  };
  for (;;) {
    const {value, done} = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, {stream: true});
    let nl;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      emit(line);
    }
  }
  emit(buffer + decoder.decode());
}

const STOP_TYPES = new Set(['result', 'error']);
const WORKING = new Set(['queued', 'planning', 'executing']);

/**
 * Read a run's event log after `after` and follow it (GET .../events?after=N&follow=1) until it
 * stops. The server closes a follow when the run completes, fails or waits for a decision, or
 * after its own time limit, with a stop event or a `stream_end` saying why: a follow whose window
 * was spent (`stream_time_spent`) is made again from the last seq seen, and otherwise the run
 * record decides (a decided pause goes on into its resume). Returns the last seq seen.
 */
export async function followRun(runId, after, onEvent, {signal} = {}) {
  const path = `/api/agent/runs/${encodeURIComponent(runId)}`;
  let last = after;
  for (;;) {
    let lastType = null;
    let windowSpent = false;
    let count = 0;
    await streamNdjson('GET', `${path}/events?after=${last}&follow=1`, (ev) => {
      if (ev.type === 'stream_end') {
        windowSpent = ev.reason === 'stream_time_spent';
      } else {
        count += 1;
        lastType = ev.type;
      }
      if (typeof ev.seq === 'number') last = Math.max(last, ev.seq);
      onEvent(ev);
    }, {signal});
    if (windowSpent || (count > 0 && !STOP_TYPES.has(lastType))) continue;
    const run = await callJson('GET', path, {signal});
    if (run.lastSeq <= last && (count > 0 || !WORKING.has(run.status))) return last;
    if (count === 0) await new Promise((resolve) => setTimeout(resolve, 500));
  }
}
