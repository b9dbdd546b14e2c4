// One pending side effect as a card: the tool, its preview and the policy's reason, with
// Approve / Reject buttons (POST /api/agent/approve). Errors (409 already decided, 410 expired,
// ...) are shown on the card. An approval is named by approvalId everywhere (a run's seed-001
// result also carries it as id); one of a plan session links to the session and its task.
// "Edit arguments" opens a form built from the tool's schema (GET /api/agent/approvals/{id}): an
// approval then sends the edited arguments (approve with edits; the server validates them).
// A budget approval (kind budget: a unit stopped at a money budget, docs/budgets.md) shows what was
// spent against which limit; its buttons say what they do: raise the limit to the proposed one
// (the unit goes on where it stopped) or stop the unit (its work kept). It takes no edits.

import {callJson} from './api.js';
import {h, when} from './dom.js';
import {showError} from './errors.js';

export function approvalCard(approval, {runId, threadId, onDecided} = {}) {
  const approvalId = approval.approvalId || approval.id;
  const sessionId = approval.sessionId;
  const reasonId = `reason-${approvalId}`;
  const errors = h('div', {class: 'errors'});
  const outcome = h('p', {class: 'decision', 'aria-live': 'polite'});
  const reasonInput = h('input', {id: reasonId, name: 'reason', placeholder: 'optional'});
  const budget = approval.kind === 'budget';
  const approveBtn = h('button', {type: 'button', class: 'approve'},
    budget ? `Raise to ${usd(approval.proposedLimitUsd)}` : 'Approve');
  const rejectBtn = h('button', {type: 'button', class: 'reject'}, budget ? 'Stop here' : 'Reject');
  const state = h('span', {class: 'chip chip-awaiting_confirmation'}, 'awaiting approval');
  const card = h('section', {class: 'card approval-card', 'data-approval-id': approvalId,
    'data-session-id': sessionId || null, 'aria-label': `Approval ${approvalId}: ${approval.tool}`},
  h('h3', {}, h('span', {class: 'tool-name'}, approval.tool), ' ', state),
  h('p', {class: 'preview'}, approval.preview),
  budget ? budgetFigures(approval) : h('p', {class: 'reason'}, h('span', {class: 'label'}, 'Why it asks: '),
    approval.reason),
  sessionId ? h('p', {class: 'meta'}, 'plan session ', h('a', {href: `#/plans/${sessionId}`}, sessionId),
    approval.taskId ? ` · task ${approval.taskId}` : '', ` · approval ${approvalId}`)
    : runId ? h('p', {class: 'meta'}, 'run ', h('a', {href: `#/runs/${runId}`}, runId),
      threadId ? ` · thread ${threadId}` : '', ` · approval ${approvalId}`) : null,
  approval.createdAt ? h('p', {class: 'hint'}, `asked ${when(approval.createdAt)} · expires ${when(approval.expiresAt)}`)
    : null,
  h('div', {class: 'row'}, h('label', {for: reasonId}, 'Reason'), reasonInput, approveBtn, rejectBtn),
  outcome, errors);
  if (budget) card.classList.add('budget-card');
  const editor = budget ? {edited: () => null} : argumentsEditor(approvalId, errors);
  if (!budget) card.insertBefore(editor.el, card.querySelector('.row'));

  async function decide(decision) {
    approveBtn.disabled = rejectBtn.disabled = true;
    errors.replaceChildren();
    const body = {approvalId, decision};
    if (reasonInput.value.trim()) body.reason = reasonInput.value.trim();
    if (decision === 'approve') {
      try {
        const edited = editor.edited();
        if (edited) body.arguments = edited;
      } catch (err) {
        showError(errors, err, `arguments of ${approvalId}`);
        approveBtn.disabled = rejectBtn.disabled = false;
        return;
      }
    }
    try {
      const resp = await callJson('POST', '/api/agent/approve', {body});
      outcome.textContent = `${resp.decision}: ${resp.status.replace(/_/g, ' ')}`;
      card.dataset.decision = resp.decision;
      state.className = `chip chip-${resp.decision === 'approved' ? 'completed' : 'rejected'}`;
      state.textContent = resp.decision;
      if (onDecided) await onDecided(resp, card);
    } catch (err) {
      showError(errors, err, `${decision} ${approvalId}`);
      approveBtn.disabled = rejectBtn.disabled = false;
    }
  }
  card.settled = () => { // decided elsewhere (another view or tab): the run went on without this card
    if (card.dataset.decision) return;
    card.dataset.decision = 'decided';
    approveBtn.disabled = rejectBtn.disabled = reasonInput.disabled = true;
    state.className = 'chip chip-completed';
    state.textContent = 'decided';
    outcome.textContent = 'decided elsewhere: the run went on';
  };
  approveBtn.addEventListener('click', () => decide('approve'));
  rejectBtn.addEventListener('click', () => decide('reject'));
  return card;
}

function usd(value) {
  return typeof value === 'number' ? `$${value.toFixed(4)}` : '';
}

const SCOPES = {run: "this run's budget", user_day: 'your daily budget', user_month: 'your monthly budget'};

/** A budget approval's figures: what was spent against which limit, and what approving sets. */
function budgetFigures(approval) {
  return h('dl', {class: 'facts budget-figures'},
    h('dt', {}, 'limit'), h('dd', {class: 'budget-scope'}, `${SCOPES[approval.budgetScope] || approval.budgetScope}: `,
      h('span', {class: 'budget-limit'}, usd(approval.limitUsd))),
    h('dt', {}, 'spent'), h('dd', {class: 'budget-spent'}, usd(approval.spentUsd)),
    h('dt', {}, 'if raised'), h('dd', {class: 'budget-proposed'}, usd(approval.proposedLimitUsd)),
    h('dt', {}, 'if stopped'), h('dd', {}, 'the run ends here (BUDGET_EXCEEDED); the work done so far is kept'));
}

/** One input per argument of the tool's JSON schema: text, number, checkbox, or JSON for the rest. */
function field(name, schema, value, id) {
  const type = schema.type || (schema.anyOf || []).map((s) => s.type).find((t) => t && t !== 'null');
  if (type === 'boolean') {
    const input = h('input', {id, type: 'checkbox', name});
    input.checked = Boolean(value);
    return {input, read: () => input.checked};
  }
  if (type === 'integer' || type === 'number') {
    const input = h('input', {id, type: 'number', name, step: type === 'integer' ? '1' : 'any'});
    input.value = value ?? '';
    return {input, read: () => (input.value === '' ? null : Number(input.value))};
  }
  if (type === 'string') {
    const input = h('textarea', {id, name, rows: String(Math.min(6, 1 + Math.floor(String(value ?? '').length / 60)))});
    input.value = value ?? '';
    return {input, read: () => input.value};
  }
  const input = h('textarea', {id, name, class: 'json', rows: '3'});
  input.value = value === undefined ? '' : JSON.stringify(value);
  return {input, read: () => (input.value.trim() === '' ? null : JSON.parse(input.value))};
}

function argumentsEditor(approvalId, errors) {
  const form = h('div', {class: 'arguments-form'});
  const el = h('details', {class: 'edit-arguments'}, h('summary', {}, 'Edit arguments'), form);
  let fields = null; // [{name, read}] once the schema is loaded
  let original = null;
  el.addEventListener('toggle', async () => {
    if (!el.open || fields) return;
    try {
      const detail = await callJson('GET', `/api/agent/approvals/${encodeURIComponent(approvalId)}`);
      original = detail.arguments;
      const props = (detail.argumentsSchema || {}).properties;
      if (!props) {
        form.append(h('p', {class: 'hint'}, 'This tool takes no edits.'));
        fields = [];
        return;
      }
      fields = Object.entries(props).map(([name, schema]) => {
        const id = `arg-${approvalId}-${name}`;
        const f = field(name, schema, original[name], id);
        const label = f.input.classList.contains('json') ? `${name} (JSON)` : name;
        form.append(h('div', {class: 'row'}, h('label', {for: id}, label), f.input));
        return {name, read: f.read};
      });
    } catch (err) {
      showError(errors, err, `arguments of ${approvalId}`);
    }
  });
  return {
    el,
    /** The edited arguments, or null when the form was not opened or nothing changed. */
    edited() {
      if (!fields || !fields.length) return null;
      const out = {};
      for (const {name, read} of fields) {
        const value = read();
        if (value !== null) out[name] = value;
      }
      return JSON.stringify(out) === JSON.stringify(original) ? null : out;
    },
  };
}
