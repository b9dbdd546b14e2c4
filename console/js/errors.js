// How an error is shown: its code, HTTP status and message (and details when the API gave any),
// in a role="alert" box. Views call showError for every failure they catch.

import {ApiError} from './api.js';
import {h, json} from './dom.js';

export function errorBox(err, context) {
  const api = err instanceof ApiError;
  const code = api ? err.code : (err && err.name) || 'ERROR';
  const message = api ? err.apiMessage : String((err && err.message) || err);
  const details = api ? err.details : null;
  const box = h('div', {class: 'error', role: 'alert', 'data-code': code},
    h('strong', {class: 'error-code'}, code),
    api && err.status ? h('span', {class: 'error-status'}, `HTTP ${err.status}`) : null,
    context ? h('span', {class: 'error-context'}, context) : null,
    h('span', {class: 'error-message'}, message),
    h('button', {type: 'button', class: 'dismiss', 'aria-label': `Dismiss ${code}`,
      onclick: () => box.remove()}, '×'),
    details ? h('details', {}, h('summary', {}, 'details'), h('pre', {}, json(details))) : null);
  return box;
}

export function showError(container, err, context) {
  if (err && err.name === 'AbortError') return null; // the console cancelled it (another user/thread)
  const box = errorBox(err, context);
  container.append(box);
  return box;
}
