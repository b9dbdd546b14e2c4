// Usage: GET /api/agent/usage?from=&to=&groupBy= as totals, a bar chart (plain SVG) and a table.

import {callJson} from '../api.js';
import {clear, h, parts} from '../dom.js';
import {showError} from '../errors.js';

const SVG = 'http://www.w3.org/2000/svg';
const DAY_MS = 86400000;

function svg(tag, attrs = {}, text = null) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== null) el.textContent = text;
  return el;
}

/** Horizontal bars of total tokens per group, labelled with the group and its figures. */
export function barChart(groups, groupBy) {
  const rowH = 28;
  const labelW = 190;
  const barW = 480;
  const width = labelW + barW + 170;
  const height = Math.max(1, groups.length) * rowH + 8;
  const max = Math.max(1, ...groups.map((g) => g.usage.totalTokens));
  const chart = svg('svg', {viewBox: `0 0 ${width} ${height}`, class: 'chart', role: 'img',
    'aria-label': `Total tokens by ${groupBy}: ` + groups.map((g) => `${g.key} ${g.usage.totalTokens}`).join(', ')});
  groups.forEach((g, i) => {
    const y = 4 + i * rowH;
    const w = Math.max(2, Math.round((g.usage.totalTokens / max) * barW));
    chart.append(
      svg('text', {x: labelW - 8, y: y + 18, 'text-anchor': 'end', class: 'chart-label'}, g.key),
      svg('rect', {x: labelW, y: y + 4, width: w, height: rowH - 10, rx: 3, class: 'chart-bar', 'data-key': g.key}),
      svg('text', {x: labelW + w + 6, y: y + 18, class: 'chart-value'},
        `${g.usage.totalTokens} tok · $${g.costUsd.toFixed(6)}`));
  });
  return chart;
}

function isoDay(ms) {
  return new Date(ms).toISOString().slice(0, 10);
}

export function mountUsage() {
  const {form, from, to, group, errors, result} = parts('usage', 'form', 'from', 'to', 'group', 'errors', 'result');
  to.value = isoDay(Date.now());
  from.value = isoDay(Date.now() - 29 * DAY_MS);

  let latest = 0;

  async function show() {
    const mine = ++latest; // answers can arrive out of order: only the last request's is drawn
    clear(errors);
    const params = new URLSearchParams();
    if (from.value) params.set('from', from.value);
    if (to.value) params.set('to', to.value);
    params.set('groupBy', group.value);
    let body;
    try {
      body = await callJson('GET', `/api/agent/usage?${params}`);
    } catch (err) {
      if (mine !== latest) return;
      clear(result);
      showError(errors, err, 'usage');
      return;
    }
    if (mine !== latest) return;
    clear(result);
    const u = body.usage;
    result.append(
      h('p', {class: 'totals'}, `${body.calls} model calls from ${body.from} to ${body.to}: ${u.totalTokens} tokens ` +
        `(in ${u.inputTokens} · out ${u.outputTokens} · thinking ${u.thinkingTokens}), estimated $${body.costUsd}`),
      body.groups.length ? barChart(body.groups, body.groupBy) : h('p', {class: 'empty'}, 'No model calls in this range.'),
      h('div', {class: 'table-wrap'}, h('table', {class: 'usage-table'},
        h('thead', {}, h('tr', {}, [body.groupBy, 'calls', 'errors', 'input', 'output', 'thinking', 'total', 'cost $']
          .map((c) => h('th', {scope: 'col'}, c)))),
        h('tbody', {}, body.groups.map((g) => h('tr', {'data-key': g.key},
          [g.key, g.calls, g.errors, g.usage.inputTokens, g.usage.outputTokens, g.usage.thinkingTokens,
            g.usage.totalTokens, g.costUsd].map((v) => h('td', {}, String(v)))))))));
  }

  form.addEventListener('submit', (e) => {
    e.preventDefault();
    show();
  });
  return {show, userChanged() {}};
}
