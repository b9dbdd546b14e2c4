// Runs: the dev user's runs (GET /api/agent/runs) and, for #/runs/<runId>, the run record, its
// trace as a waterfall (js/trace.js: drawn again when the follow of its events ends) and its
// timeline drawn from the event log (followed while the run is at work). In the timeline the
// agent state is a chip, consecutive deltas are one text, and a plan's run links to its session.

import {callJson, followRun} from '../api.js';
import {$, chip, clear, h, json, when} from '../dom.js';
import {showError} from '../errors.js';
import {traceWaterfall} from '../trace.js';

function eventText(ev) {
  switch (ev.type) {
    case 'status': return ev.threadId ? `${ev.status} (thread ${ev.threadId})` : ev.status; // a plan's run has none
    case 'delta':
    case 'thought_delta': return ev.delta;
    case 'tool_call': return `${ev.toolName} ${ev.status}: ${ev.preview}`;
    case 'tool_result': return `${ev.toolName} ${ev.status}${ev.error ? `: ${ev.error}` : ''}`;
    case 'usage': return `${ev.usage.totalTokens} tokens (${ev.usage.requests} requests)`;
    case 'result': return `${ev.result.status}: ${ev.result.summary || ''}`;
    case 'error': return `${ev.code}: ${ev.error}`;
    case 'agent_state': return h('span', {class: `chip chip-agent chip-${ev.state}`, 'data-state': ev.state},
      `${ev.state.replace(/_/g, ' ')}${ev.details ? `: ${ev.details}` : ''}`);
    case 'plan_created':
    case 'plan_ready_for_review': return [h('a', {href: `#/plans/${ev.planId}`}, ev.planId),
      ` version ${ev.plan.version}: ${ev.plan.tasks.length} tasks`];
    case 'plan_review': return [chip(ev.verdict), ev.notes ? ` ${ev.notes}` : ''];
    case 'step_start': return `${ev.stepId}: ${ev.title}`;
    case 'step_complete': return [`${ev.stepId} `, chip(ev.status), ev.summary ? ` ${ev.summary}` : ''];
    case 'executor_reason': return `${ev.stepId}: ${ev.text}`;
    case 'executor_act': return `${ev.stepId}: ${ev.toolName}: ${ev.preview}`;
    case 'executor_observe': return [`${ev.stepId}: ${ev.toolName} `, chip(ev.outcome)];
    case 'executor_reflect': return [`${ev.stepId} `, chip(ev.taskComplete ? 'completed' : ev.taskFailed ? 'failed'
      : 'in_progress'), ev.summary ? ` ${ev.summary}` : ''];
    case 'approval_required': return `${ev.stepId}: ${ev.toolName} waits for a decision: ${ev.preview}`;
    case 'plan_updated': return [h('a', {href: `#/plans/${ev.planId}`}, ev.planId),
      ` version ${ev.plan.version}${ev.reason ? `: ${ev.reason}` : ''}`];
    case 'plan_status': return [h('a', {href: `#/plans/${ev.planId}`}, ev.planId), ' ', chip(ev.status)];
    case 'plan_result': return chip(ev.result.status);
    default: return json(ev, 300);
  }
}

const JOINED = new Set(['delta', 'thought_delta']);

/** The timeline of a run: one item per event, except that consecutive deltas of one kind are one
 * text (an item spanning seqs data-seq..data-last-seq). */
function timelineAppender(timeline) {
  let open = null; // {type, li, seq, text} of the deltas being joined
  return (ev) => {
    // Why a follow closed (stream_end repeats the last seq): the follow's business, not the log's.
    if (ev.type === 'stream_end') return;
    if (JOINED.has(ev.type) && open && open.type === ev.type) {
      open.text.append(ev.delta);
      open.li.dataset.lastSeq = String(ev.seq);
      open.seq.textContent = `#${open.li.dataset.seq}–${ev.seq}`;
      return;
    }
    const seq = h('span', {class: 'seq'}, `#${ev.seq}`);
    const text = h('span', {class: 'text'}, eventText(ev));
    const li = h('li', {class: `ev ev-${ev.type}`, 'data-seq': ev.seq, 'data-last-seq': ev.seq},
      seq, ' ', h('span', {class: 'type'}, ev.type), ' ', text);
    timeline.append(li);
    open = JOINED.has(ev.type) ? {type: ev.type, li, seq, text} : null;
  };
}

function sessionLink(sessionId) {
  return h('a', {href: `#/plans/${sessionId}`, class: 'session-link'}, `plan session ${sessionId}`);
}

function usageText(u) {
  return u ? `${u.totalTokens} (in ${u.inputTokens} · out ${u.outputTokens} · thinking ${u.thinkingTokens})` : '';
}

export function mountRuns() {
  const tbody = $('#runs-table tbody');
  const errors = $('#runs-errors');
  const detail = $('#run-detail');
  let loads = new AbortController();

  async function list() {
    clear(errors);
    let runs;
    try {
      ({runs} = await callJson('GET', '/api/agent/runs?limit=200', {signal: loads.signal}));
    } catch (err) {
      showError(errors, err, 'listing runs');
      return;
    }
    clear(tbody);
    if (!runs.length) tbody.append(h('tr', {}, h('td', {colspan: 8}, 'No runs yet.')));
    for (const r of runs) {
      tbody.append(h('tr', {'data-run-id': r.runId},
        h('td', {}, h('a', {href: `#/runs/${r.runId}`}, r.runId)),
        h('td', {}, r.sessionId ? sessionLink(r.sessionId) : r.threadId), h('td', {}, r.host), h('td', {}, chip(r.status)),
        h('td', {}, String(r.steps)),
        h('td', {}, String(r.usage.totalTokens)), h('td', {}, when(r.createdAt)),
        h('td', {class: 'summary-cell'}, r.error ? `${r.error.code}: ${r.error.message}` : r.summary)));
    }
  }

  async function showRun(runId) {
    clear(detail);
    let run;
    try {
      run = await callJson('GET', `/api/agent/runs/${encodeURIComponent(runId)}`, {signal: loads.signal});
    } catch (err) {
      showError(detail, err, `run ${runId}`);
      return;
    }
    const facts = [['status', chip(run.status)], ...(run.threadId ? [['thread', run.threadId]] : []), ['host', run.host], ['mode', run.mode || ''],
      ['model', run.model], ['steps', run.host === 'plan' ? String(run.steps) : `${run.steps} of ${run.maxSteps}`], ['tools executed', String(run.toolsExecuted)],
      ['last seq', String(run.lastSeq)], ['tokens', usageText(run.usage)], ['estimated cost', `$${run.costUsd}`],
      ['started', when(run.createdAt)], ['updated', when(run.updatedAt)]];
    const sessionId = run.sessionId || null;
    if (sessionId) facts.unshift(['plan session', sessionLink(sessionId)]);
    if (run.error) facts.push(['error', `${run.error.code}: ${run.error.message}`]);
    const timeline = h('ol', {class: 'timeline', 'aria-label': 'Events'});
    const traceBox = h('div', {class: 'trace-box'});
    detail.append(h('section', {class: 'run-record', 'aria-labelledby': 'run-detail-title'},
      h('h3', {id: 'run-detail-title', tabindex: '-1'}, `Run ${run.runId}`),
      h('dl', {class: 'facts'}, facts.map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)])),
      run.modelCalls && run.modelCalls.length ? h('details', {},
        h('summary', {}, `${run.modelCalls.length} model calls`),
        h('div', {class: 'table-wrap'}, h('table', {},
          h('thead', {}, h('tr', {}, ['step', 'operation', 'model', 'outcome', 'tokens', 'latency ms', 'cost $']
            .map((c) => h('th', {scope: 'col'}, c)))),
          h('tbody', {}, run.modelCalls.map((c) => h('tr', {},
            [c.step ?? '', c.operationType, c.model, c.outcome, c.usage.totalTokens, Math.round(c.latencyMs), c.costUsd]
              .map((v) => h('td', {}, String(v))))))))) : null,
      traceBox, h('h4', {}, 'Timeline (event log)'), timeline));
    $('#run-detail-title').focus(); // keyboard users land on what they opened
    const signal = loads.signal;
    async function drawTrace() {
      try {
        const trace = await callJson('GET', `/api/agent/runs/${encodeURIComponent(run.runId)}/trace`, {signal});
        traceBox.replaceChildren(traceWaterfall(trace));
      } catch (err) {
        if (!signal.aborted) showError(traceBox, err, `trace of ${run.runId}`);
      }
    }
    drawTrace();
    try {
      await followRun(run.runId, 0, timelineAppender(timeline), {signal});
      if (!signal.aborted) await drawTrace(); // the follow ended: the run stopped (paused or ended)
    } catch (err) {
      showError(detail, err, `events of ${run.runId}`);
    }
  }

  $('#runs-refresh').addEventListener('click', list);
  return {
    show(runId) {
      loads.abort();
      loads = new AbortController();
      list();
      if (runId) showRun(runId);
      else clear(detail);
    },
    userChanged() {},
  };
}
