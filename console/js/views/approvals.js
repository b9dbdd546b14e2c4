// Approvals: the dev user's approvals inbox (GET /api/agent/approvals?status=pending), chat runs and
// plan sessions alike, newest first, each as a card. A chat run's decision is followed live into
// the resumed run (events?after=N&follow=1; the run and the seq it is followed from are kept in
// localStorage, so a reload replays from that seq); a plan session's card links to the session.

import {callJson, followRun} from '../api.js';
import {$, clear, h} from '../dom.js';
import {approvalCard} from '../approval.js';
import {showError} from '../errors.js';
import {RunView} from '../runview.js';
import {load, save} from '../store.js';

const LISTED = 100;

export function mountApprovals() {
  const list = $('#approvals-list');
  const errors = $('#approvals-errors');
  const following = $('#approvals-following');
  let loads = new AbortController();

  async function followDecided(runId, threadId, after) {
    save('following', {runId, threadId, after});
    const view = new RunView({runId, threadId, source: 'event-log'});
    following.prepend(h('section', {class: 'following', 'aria-label': `Run ${runId} after the decision`},
      h('h3', {}, `Run ${runId} after the decision (events after seq ${after})`), view.el));
    try {
      await followRun(runId, after, (ev) => view.handle(ev), {signal: loads.signal});
      if (view.final) save('following', null);
    } catch (err) {
      showError(errors, err, `following ${runId}`);
    }
  }

  function sessionDecided(sessionId) {
    following.prepend(h('section', {class: 'following', 'aria-label': `Session ${sessionId} after the decision`},
      h('p', {}, 'The plan session goes on: ', h('a', {href: `#/plans/${sessionId}`}, `follow ${sessionId} in Plans`))));
  }

  /** Where a chat run's events stand before the decision (the resumed part is followed from there). */
  async function lastSeq(runId) {
    try {
      return (await callJson('GET', `/api/agent/runs/${encodeURIComponent(runId)}`, {signal: loads.signal})).lastSeq;
    } catch (err) {
      return 0; // follow the whole event log rather than nothing
    }
  }

  async function refresh() {
    loads.abort();
    loads = new AbortController();
    clear(list);
    clear(errors);
    clear(following);
    const kept = load('following');
    if (kept) followDecided(kept.runId, kept.threadId, kept.after);
    let approvals;
    try {
      ({approvals} = await callJson('GET', `/api/agent/approvals?status=pending&limit=${LISTED}`,
        {signal: loads.signal}));
    } catch (err) {
      showError(errors, err, 'listing approvals');
      return;
    }
    if (!approvals.length) list.append(h('p', {class: 'empty'}, 'Nothing is waiting for a decision.'));
    for (const approval of approvals) {
      const before = approval.sessionId ? null : lastSeq(approval.runId);
      list.append(approvalCard(approval, {
        runId: approval.runId,
        onDecided: async () => {
          if (approval.sessionId) sessionDecided(approval.sessionId);
          else await followDecided(approval.runId, null, await before);
        },
      }));
    }
  }

  $('#approvals-refresh').addEventListener('click', refresh);
  return {show: refresh, userChanged() {}};
}
