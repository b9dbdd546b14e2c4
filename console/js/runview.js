// A run drawn from its events (live stream or event log): the answer as deltas arrive, thoughts
// in a collapsible block, each tool call as a card that its result completes, the run's status
// and the agent state (agent_state) as chips, token usage, plans the run made (with a link to
// review them in Plans) and their steps, and the approvals a pause waits for.

import {approvalCard} from './approval.js';
import {chip, h, json} from './dom.js';
import {errorBox} from './errors.js';

const FINAL_STATUSES = new Set(['completed', 'failed', 'rejected', 'deadline_exceeded', 'cancelled']);

export class RunView {
  /**
   * options.prompt: the user's prompt, when known (the event log does not hold it); options.source:
   * 'live' (a stream this page started) or 'event-log' (drawn from GET .../events);
   * options.onEvent(ev, view): after each new event; options.onDecided(resp, view): after an
   * approval on one of this run's cards was recorded (the caller follows the resumed run).
   */
  constructor({runId = null, threadId = null, prompt = null, source = 'live', onEvent = null, onDecided = null} = {}) {
    this.runId = runId;
    this.threadId = threadId;
    this.status = 'starting';
    this.lastSeq = 0;
    this.lastType = null;
    this.onEvent = onEvent;
    this.onDecided = onDecided;
    this.seen = new Set();
    this.cards = new Map();
    this.block = null; // the answer or thoughts block deltas currently append to
    this.chip = chip('starting');
    this.usage = h('span', {class: 'usage'});
    this.agentState = h('span', {class: 'agent-state', 'aria-live': 'polite'});
    this.link = h('span', {class: 'run-id'}, runId || 'new run');
    this.head = h('header', {class: 'run-head'}, this.chip, ' ', this.agentState, ' ', this.link, ' ', this.usage,
      h('span', {class: 'source'}, source === 'live' ? 'live stream' : 'from the event log'));
    this.body = h('div', {class: 'run-body'});
    this.el = h('article', {class: 'run', 'data-run-id': runId || '', 'data-source': source, 'aria-label': 'Run'},
      this.head);
    if (prompt) this.el.append(h('div', {class: 'bubble user'}, h('span', {class: 'who'}, 'you'), prompt));
    this.el.append(this.body);
    if (runId) this.setRun(runId, threadId);
  }

  setRun(runId, threadId) {
    this.runId = runId;
    this.threadId = threadId || this.threadId;
    this.el.dataset.runId = runId;
    this.link.replaceChildren(h('a', {href: `#/runs/${runId}`, title: 'timeline of this run'}, runId),
      this.threadId ? ` · thread ${this.threadId}` : '');
  }

  setStatus(status) {
    this.status = status;
    if (FINAL_STATUSES.has(status)) { // the loop is done: its last agent_state no longer holds
      this.agentState.replaceChildren();
      delete this.el.dataset.agentState;
    }
    this.el.dataset.status = status;
    const next = chip(status);
    next.setAttribute('aria-label', `agent state: ${status}`);
    this.chip.replaceWith(next);
    this.chip = next;
  }

  get final() {
    return FINAL_STATUSES.has(this.status);
  }

  handle(ev) {
    // stream_end repeats the seq of the event before it (it takes no number): not a replayed event.
    if (typeof ev.seq === 'number' && ev.type !== 'stream_end') {
      if (this.seen.has(ev.seq)) return; // a replay that overlaps what was already drawn
      this.seen.add(ev.seq);
      this.lastSeq = Math.max(this.lastSeq, ev.seq);
    }
    this.lastType = ev.type;
    const draw = DRAW[ev.type];
    if (draw) draw.call(this, ev);
    else this.body.append(h('pre', {class: 'unknown-event'}, json(ev)));
    this.el.dataset.lastSeq = String(this.lastSeq);
    if (this.onEvent) this.onEvent(ev, this);
  }

  textBlock(kind) {
    if (this.block && this.block.kind === kind) return this.block;
    let node;
    let target;
    if (kind === 'thought') {
      target = h('pre', {class: 'thought-text'});
      node = h('details', {class: 'thoughts'}, h('summary', {}, 'Thoughts'), target);
    } else {
      target = h('div', {class: 'answer-text'});
      node = h('div', {class: 'bubble agent'}, h('span', {class: 'who'}, 'agent'), target);
    }
    this.body.append(node);
    this.block = {kind, node, target};
    return this.block;
  }

  showAnswerIfSilent(text) {
    if (!text || this.body.querySelector('.answer-text')) return;
    this.textBlock('text').target.append(text);
  }
}

const DRAW = {
  status(ev) {
    if (ev.runId) this.setRun(ev.runId, ev.threadId);
    if (this.status === 'awaiting_confirmation' && ev.status !== 'awaiting_confirmation') {
      // The pause is over (its approvals were decided, here or elsewhere): its cards are settled.
      for (const card of this.body.querySelectorAll('.approval-card')) if (card.settled) card.settled();
    }
    this.setStatus(ev.status);
  },
  delta(ev) {
    this.textBlock('text').target.append(ev.delta);
  },
  thought_delta(ev) {
    this.textBlock('thought').target.append(ev.delta);
  },
  tool_call(ev) {
    this.block = null;
    const known = this.cards.get(ev.actionId);
    if (known) { // the same call again: executing after its approval, in the resumed invocation
      const next = h('span', {class: `chip chip-${ev.status}`}, ev.status);
      known.state.replaceWith(next);
      known.state = next;
      return;
    }
    const state = h('span', {class: `chip chip-${ev.status}`}, ev.status);
    const card = h('section', {class: 'card tool-card', 'data-action-id': ev.actionId, 'data-tool': ev.toolName,
      'aria-label': `Tool call ${ev.toolName}`},
    h('h4', {}, h('span', {class: 'label'}, 'tool '), h('span', {class: 'tool-name'}, ev.toolName), ' ', state),
    h('p', {class: 'preview'}, ev.preview));
    this.cards.set(ev.actionId, {card, state});
    this.body.append(card);
  },
  tool_result(ev) {
    let entry = this.cards.get(ev.actionId);
    if (!entry) { // its call was before the part of the log this view read
      DRAW.tool_call.call(this, {toolName: ev.toolName, actionId: ev.actionId, status: ev.status, preview: ''});
      entry = this.cards.get(ev.actionId);
    }
    const state = h('span', {class: `chip chip-${ev.status}`}, ev.status);
    entry.state.replaceWith(state);
    entry.state = state;
    entry.card.dataset.result = ev.status;
    if (ev.output !== undefined) {
      entry.card.append(h('details', {class: 'tool-output'}, h('summary', {}, 'result'), h('pre', {}, json(ev.output))));
    }
    if (ev.error) entry.card.append(h('p', {class: 'tool-error'}, ev.error));
    this.block = null;
  },
  usage(ev) {
    const u = ev.usage || {};
    this.usage.textContent = `${u.totalTokens ?? 0} tokens (in ${u.inputTokens ?? 0} · out ${u.outputTokens ?? 0}` +
      ` · thinking ${u.thinkingTokens ?? 0})`;
  },
  result(ev) {
    const r = ev.result;
    if (r.runId) this.setRun(r.runId, r.threadId);
    this.setStatus(r.status);
    this.block = null;
    if (r.status === 'awaiting_confirmation') {
      const approvals = r.approvals && r.approvals.length ? r.approvals : (r.approval ? [r.approval] : []);
      for (const approval of approvals) {
        this.body.append(approvalCard(approval, {
          onDecided: this.onDecided ? (resp) => this.onDecided(resp, this) : null,
        }));
      }
    } else {
      this.showAnswerIfSilent((r.output && r.output.text) || r.summary);
    }
  },
  agent_state(ev) {
    const label = `${ev.state.replace(/_/g, ' ')}${ev.details ? `: ${ev.details}` : ''}`;
    this.agentState.replaceChildren(h('span', {class: `chip chip-agent chip-${ev.state}`, 'data-state': ev.state,
      title: `agent state (contextType ${ev.contextType})`}, label));
    this.el.dataset.agentState = ev.state;
  },
  plan_created(ev) {
    this.block = null;
    this.body.append(planCard(ev, `plan created (${ev.executionMode})`));
  },
  plan_ready_for_review(ev) {
    this.block = null;
    const card = planCard(ev, 'plan ready for review');
    if (ev.reasoning) card.append(h('p', {class: 'reason'}, ev.reasoning));
    card.append(h('p', {}, h('a', {href: `#/plans/${ev.planId}`}, 'Review, refine or confirm it in Plans')));
    const created = this.body.querySelector(`.plan-card[data-plan-id="${CSS.escape(ev.planId)}"]`);
    if (created) created.replaceWith(card); // the same plan: one card, now waiting for its review
    else this.body.append(card);
  },
  plan_review(ev) {
    this.block = null;
    this.body.append(h('p', {class: 'plan-line', 'data-plan-id': ev.planId},
      h('span', {class: 'label'}, 'review of the plan: '), chip(ev.verdict), ev.notes ? ` ${ev.notes}` : ''));
  },
  step_start(ev) {
    this.block = null;
    this.body.append(h('p', {class: 'plan-line', 'data-step-id': ev.stepId},
      h('span', {class: 'label'}, `step ${ev.stepId} started: `), ev.title));
  },
  step_complete(ev) {
    this.block = null;
    this.body.append(h('p', {class: 'plan-line', 'data-step-id': ev.stepId},
      h('span', {class: 'label'}, `step ${ev.stepId} `), chip(ev.status), ev.summary ? ` ${ev.summary}` : ''));
  },
  executor_act(ev) { // a step of the run's plan calls a tool (relayed live from the plan)
    DRAW.tool_call.call(this, {toolName: ev.toolName, actionId: ev.actionId || `${ev.stepId}-${ev.seq}`,
      status: 'executing', preview: ev.preview});
    this.cards.get(ev.actionId || `${ev.stepId}-${ev.seq}`).card.dataset.stepId = ev.stepId;
    this.lastAct = ev.actionId || `${ev.stepId}-${ev.seq}`;
  },
  executor_observe(ev) {
    const entry = this.lastAct && this.cards.get(this.lastAct);
    if (!entry) return;
    const status = {ok: 'completed', error: 'failed'}[ev.outcome] || ev.outcome;
    const state = h('span', {class: `chip chip-${status}`}, status);
    entry.state.replaceWith(state);
    entry.state = state;
    entry.card.dataset.result = status;
    entry.card.append(h('details', {class: 'tool-output'}, h('summary', {}, 'result'), h('pre', {}, json(ev.observation))));
    this.block = null;
  },
  approval_required(ev) { // the run's plan waits for a decision: decide it here or in Approvals
    this.block = null;
    this.body.append(approvalCard({approvalId: ev.approvalId, tool: ev.toolName, preview: ev.preview,
      reason: ev.reason, sessionId: ev.planId, taskId: ev.stepId}, {
      onDecided: this.onDecided ? (resp) => this.onDecided(resp, this) : null,
    }));
  },
  executor_reason(ev) {
    this.block = null;
    this.body.append(h('p', {class: 'plan-line reason', 'data-step-id': ev.stepId}, ev.text));
  },
  executor_reflect(ev) {
    this.block = null;
    if (ev.summary) this.body.append(h('p', {class: 'plan-line reflect', 'data-step-id': ev.stepId}, ev.summary));
  },
  plan_status(ev) {
    this.block = null;
    this.body.append(h('p', {class: 'plan-line', 'data-plan-id': ev.planId},
      h('span', {class: 'label'}, 'plan '), chip(ev.status)));
  },
  plan_result() {}, // its status was just drawn (plan_status)
  plan_updated(ev) {
    this.block = null;
    this.body.append(planCard(ev, `plan updated${ev.reason ? ` (${ev.reason})` : ''}`));
  },
  stream_end(ev) { // stream only: the run goes on without this stream (followed from ev.follow)
    // A follow that closed at a pause or after the end: the run's own events said it already.
    if (ev.reason === 'awaiting_approval' || ev.reason === 'run_ended') return;
    // One hint per run view: a later stream's end (a follow that closed for the same reason, a
    // second pause) replaces the earlier hint and goes to the end, so the view never shows two.
    this.body.querySelector(':scope > .stream-end')?.remove();
    this.block = null;
    this.setStatus(ev.status);
    this.body.append(h('p', {class: 'hint stream-end', 'data-reason': ev.reason},
      ev.reason === 'plan_awaiting_approval' ? 'The plan waits for your decision above (also in Approvals); '
        + 'the run goes on after it.' : 'The run goes on; following it.'));
  },
  error(ev) {
    this.block = null;
    if (ev.code !== 'RUN_TAKEN_OVER') this.setStatus('failed');
    const box = errorBox({name: ev.code, message: ev.error});
    box.dataset.code = ev.code;
    this.body.append(box);
  },
};

function planCard(ev, title) {
  return h('section', {class: 'card plan-card', 'data-plan-id': ev.planId, 'aria-label': title},
    h('h4', {}, h('span', {class: 'label'}, `${title} · `), h('a', {href: `#/plans/${ev.planId}`}, ev.planId),
      ` · version ${ev.plan.version}`),
    h('ol', {class: 'plan-tasks'}, ev.plan.tasks.map((t) => h('li', {'data-task-id': t.taskId}, t.title))));
}
