// One pending side effect as a card: the tool, its preview and the policy's reason, with
// Approve / Reject buttons (POST /api/agent/approve). Errors (409 already decided, 410 expired,
// ...) are shown on the card. An approval is named by approvalId everywhere (a run's seed-001
// result also carries it as id); one of a plan session links to the session and its task.

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
  const approveBtn = h('button', {type: 'button', class: 'approve'}, 'Approve');
  const rejectBtn = h('button', {type: 'button', class: 'reject'}, 'Reject');
  const state = h('span', {class: 'chip chip-awaiting_confirmation'}, 'awaiting approval');
  const card = h('section', {class: 'card approval-card', 'data-approval-id': approvalId,
    'data-session-id': sessionId || null, 'aria-label': `Approval ${approvalId}: ${approval.tool}`},
  h('h3', {}, h('span', {class: 'tool-name'}, approval.tool), ' ', state),
  h('p', {class: 'preview'}, approval.preview),
  h('p', {class: 'reason'}, h('span', {class: 'label'}, 'Why it asks: '), approval.reason),
  sessionId ? h('p', {class: 'meta'}, 'plan session ', h('a', {href: `#/plans/${sessionId}`}, sessionId),
    approval.taskId ? ` · task ${approval.taskId}` : '', ` · approval ${approvalId}`)
    : runId ? h('p', {class: 'meta'}, 'run ', h('a', {href: `#/runs/${runId}`}, runId),
      threadId ? ` · thread ${threadId}` : '', ` · approval ${approvalId}`) : null,
  approval.createdAt ? h('p', {class: 'hint'}, `asked ${when(approval.createdAt)} · expires ${when(approval.expiresAt)}`)
    : null,
  h('div', {class: 'row'}, h('label', {for: reasonId}, 'Reason'), reasonInput, approveBtn, rejectBtn),
  outcome, errors);

  async function decide(decision) {
    approveBtn.disabled = rejectBtn.disabled = true;
    errors.replaceChildren();
    const body = {approvalId, decision};
    if (reasonInput.value.trim()) body.reason = reasonInput.value.trim();
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
