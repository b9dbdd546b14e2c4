// A run's trace as a waterfall (GET /api/agent/runs/{runId}/trace): one row per span, in start
// order: its stretches of work (invoke_agent), model calls (chat, with tokens and cost), tool calls
// (execute_tool) and the waits for a person between them; each bar is placed on the run's time
// axis (left: its start, width: its duration). Bars are positioned through the CSSOM (the
// console's Content-Security-Policy has no inline styles).

import {h} from './dom.js';

function ms(value) {
  return value >= 1000 ? `${(value / 1000).toFixed(value >= 10_000 ? 0 : 1)} s` : `${Math.round(value)} ms`;
}

function details(span) {
  switch (span.kind) {
    case 'model': return [`${span.inputTokens} in · ${span.outputTokens} out tokens`, `$${span.costUsd}`,
      span.step != null ? `step ${span.step}` : null, span.operationType, span.outcome !== 'ok' ? span.outcome : null];
    case 'tool': return [span.outcome || span.status, span.approvalId ? `approved (${span.approvalId})` : null];
    case 'wait': return [span.open ? 'waiting' : span.status, span.tool];
    default: return [span.open ? 'at work' : null];
  }
}

export function traceWaterfall(trace) {
  const total = Math.max(trace.durationMs, 1);
  const rows = trace.spans.map((span) => {
    const bar = h('span', {class: 'bar', title: `${span.name}: ${ms(span.durationMs)}`});
    bar.style.left = `${Math.min(100, (span.offsetMs / total) * 100)}%`;
    bar.style.width = `${Math.max(0.4, Math.min(100, (span.durationMs / total) * 100))}%`;
    const info = details(span).filter(Boolean).join(' · ');
    return h('li', {class: `span span-${span.kind}${span.open ? ' span-open' : ''}`, 'data-kind': span.kind,
      'data-span-id': span.spanId, 'data-parent-id': span.parentId},
    h('span', {class: 'span-label'}, h('span', {class: 'span-name'}, span.name), ' ',
      h('span', {class: 'span-duration'}, ms(span.durationMs)), info ? h('span', {class: 'span-info'}, ` ${info}`) : null),
    h('span', {class: 'track', 'aria-hidden': 'true'}, bar));
  });
  return h('section', {class: 'trace', 'aria-labelledby': 'run-trace-title'},
    h('h4', {id: 'run-trace-title'}, 'Trace'),
    h('p', {class: 'hint trace-summary'}, `${trace.invocations} invocation${trace.invocations === 1 ? '' : 's'} · `,
      `${ms(trace.durationMs)} · ${trace.inputTokens} in · ${trace.outputTokens} out tokens · $${trace.costUsd}`),
    h('ol', {class: 'waterfall', 'aria-label': 'Spans, in start order'}, rows));
}
