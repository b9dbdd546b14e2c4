// Tiny DOM helpers: elements are built with textContent only (never innerHTML), so text from
// the API (model output, tool previews, error messages) can never become markup.

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') el.className = value;
    else if (key === 'dataset') Object.assign(el.dataset, value);
    else if (key.startsWith('on') && typeof value === 'function') el.addEventListener(key.slice(2), value);
    else if (value === true) el.setAttribute(key, '');
    else el.setAttribute(key, String(value));
  }
  append(el, ...children);
  return el;
}

export function append(el, ...children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

export function $(selector, root = document) {
  const el = root.querySelector(selector);
  if (!el) throw new Error(`console: no element ${selector}`);
  return el;
}

// A view's elements by the last part of their ids: parts('usage', 'form', 'to') is
// {form: $('#usage-form'), to: $('#usage-to')}.
export function parts(view, ...names) {
  return Object.fromEntries(names.map((name) => [name, $(`#${view}-${name}`)]));
}

// Enter in `input` submits `form` (Shift+Enter and an input method's composition do not).
export function submitOnEnter(input, form) {
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      form.requestSubmit();
    }
  });
}

export function json(value, max = 4000) {
  const text = JSON.stringify(value, null, 2);
  return text.length > max ? `${text.slice(0, max)}\n… (${text.length - max} more characters)` : text;
}

/** A time as the API writes it (RFC 3339 UTC, e.g. 2026-11-24T19:14:54.120Z), shown to the second. */
export function when(at) {
  if (!at) return '';
  const date = typeof at === 'number' ? new Date(at * 1000) : new Date(at);
  return Number.isNaN(date.getTime()) ? String(at) : date.toISOString().replace('T', ' ').slice(0, 19) + 'Z';
}

export function chip(status) {
  return h('span', {class: `chip chip-${status}`, 'data-status': status}, status);
}
