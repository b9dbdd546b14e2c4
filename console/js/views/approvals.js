// Approvals: every pending side effect of the dev user's paused runs (GET /api/agent/runs) as a
// card; a decision is followed live into the resumed run (events?after=N&follow=1). The run and
// the seq it is followed from are kept in localStorage, so a reload replays from that seq.

import {callJson, followRun} from '../api.js';
import {$, clear, h} from '../dom.js';
import {approvalCard} from '../approval.js';
import {showError} from '../errors.js';
import {RunView} from '../runview.js';
import {load, save} from '../store.js';

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

  async function refresh() {
    loads.abort();
    loads = new AbortController();
    clear(list);
    clear(errors);
    clear(following);
    const kept = load('following');
    if (kept) followDecided(kept.runId, kept.threadId, kept.after);
    let runs;
    try {
      ({runs} = await callJson('GET', '/api/agent/runs?limit=200', {signal: loads.signal}));
    } catch (err) {
      showError(errors, err, 'listing runs');
      return;
    }
    const paused = runs.filter((r) => r.status === 'awaiting_confirmation' && r.approvals.length);
    if (!paused.length) list.append(h('p', {class: 'empty'}, 'Nothing is waiting for a decision.'));
    for (const run of paused) {
      for (const approval of run.approvals) {
        list.append(approvalCard(approval, {
          runId: run.runId, threadId: run.threadId,
          onDecided: () => followDecided(run.runId, run.threadId, run.lastSeq),
        }));
      }
    }
  }

  $('#approvals-refresh').addEventListener('click', refresh);
  return {show: refresh, userChanged() {}};
}
