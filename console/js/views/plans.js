// Plans: plan sessions (POST /api/agent/sessions). A drafted plan is a review card (refine in
// words, confirm the exact version shown, cancel); an executing session shows its tasks with
// status and ReAct history, its plan versions with what changed and why, its pending approvals
// and a countdown to its deadline, redrawn as its events arrive (events?after=N&follow=1).
// The user's sessions are listed from GET /api/agent/sessions (newest first), with their status,
// re-read while any listed session is still at work and whenever the open session's status changes.
// A session's plan is one object wherever the API answers it: plan {version, tasks, versions?}.
// Its tasks' workspaces (GET /api/agent/containers, those of the session's run) link to their files,
// read-only (GET /api/agent/containers/{id}/files[?path=]).

import {callJson, streamNdjson} from '../api.js';
import {approvalCard} from '../approval.js';
import {$, append, chip, clear, h, json, parts, when} from '../dom.js';
import {showError} from '../errors.js';

const ENDED = new Set(['completed', 'rejected', 'failed', 'deadline_exceeded', 'cancelled']);
const LISTED = 20;
const LIST_REFRESH_MS = 3000;

function countdown(deadline) {
  const left = Math.round((Date.parse(deadline) - Date.now()) / 1000);
  if (Number.isNaN(left)) return '';
  if (left <= 0) return 'deadline passed';
  const hms = [Math.floor(left / 3600), Math.floor((left % 3600) / 60), left % 60]
    .map((n, i) => (i ? String(n).padStart(2, '0') : String(n))).join(':');
  return `${hms} left`;
}

function eventLine(ev) {
  switch (ev.type) {
    case 'status': return ev.status;
    case 'plan_updated': return `version ${ev.plan.version}: ${ev.reason || ev.changes.map((c) => c.what).join('; ')}`;
    case 'task_start': return `task ${ev.index} of ${ev.total}: ${ev.title}`;
    case 'reason': return ev.text;
    case 'act': return `${ev.tool}: ${ev.preview}`;
    case 'observe': return `${ev.tool} ${ev.outcome}`;
    case 'reflect': return `${ev.taskComplete ? 'complete' : ev.taskFailed ? 'failed' : 'go on'}: ${ev.summary}`;
    case 'task_complete': return `${ev.taskId} ${ev.status}: ${ev.summary}`;
    case 'approval_required': return `${ev.tool} needs approval: ${ev.preview}`;
    case 'usage': return `${ev.usage.totalTokens} tokens`;
    case 'result': return ev.result.status;
    case 'error': return `${ev.code}: ${ev.error}`;
    default: return json(ev, 300);
  }
}

export function mountPlans() {
  const {form, errors, known} = parts('plans', 'form', 'errors', 'known');
  const detail = $('#plan-detail');
  const openForm = $('#plans-open-form');
  let loads = new AbortController();
  let ticker = null;
  let current = null; // {id, lastSeq, events (ol), body (div), refreshing}

  let listing = null;
  let listTimer = null;
  async function showKnown() {
    if (listing) listing.abort();
    listing = new AbortController();
    if (listTimer) clearTimeout(listTimer);
    listTimer = null;
    try {
      const out = await callJson('GET', `/api/agent/sessions?limit=${LISTED}`, {signal: listing.signal});
      clear(known);
      // Statuses change without this page (execution, another client): read again while any is at work.
      if (!known.closest('.view').hidden && out.sessions.some((s) => !ENDED.has(s.status))) listTimer = setTimeout(showKnown, LIST_REFRESH_MS);
      if (!out.sessions.length) return;
      known.append(h('h3', {}, 'Your sessions'),
        h('ul', {}, out.sessions.map((s) => h('li', {'data-session-id': s.sessionId},
          h('a', {href: `#/plans/${s.sessionId}`}, s.sessionId), ' ', chip(s.status), ` ${s.prompt}`))));
    } catch (err) {
      if (err.name !== 'AbortError') showError(errors, err, 'list your sessions');
    }
  }

  function stopTicker() {
    if (ticker) clearInterval(ticker);
    ticker = null;
  }

  function reviewCard(s) {
    const messageId = `refine-${s.sessionId}`;
    const message = h('textarea', {id: messageId, rows: 2, placeholder: 'e.g. add a step to write tests first'});
    message.value = current.draft; // a redraw (new events) keeps what was being typed
    message.addEventListener('input', () => { current.draft = message.value; });
    const cardErrors = h('div', {class: 'errors'});
    const refineBtn = h('button', {type: 'submit', class: 'refine'}, 'Refine');
    const version = s.plan.version;
    const confirmBtn = h('button', {type: 'button', class: 'approve confirm'}, `Confirm version ${version}`);
    const cancelBtn = h('button', {type: 'button', class: 'reject cancel'}, 'Cancel session');
    const refineForm = h('form', {class: 'stack'}, h('label', {for: messageId}, 'Refine the plan in words'), message,
      h('div', {class: 'row'}, refineBtn, confirmBtn, cancelBtn));
    refineForm.addEventListener('submit', async (e) => {
      e.preventDefault();
      clear(cardErrors);
      if (!message.value.trim()) {
        message.focus();
        return;
      }
      refineBtn.disabled = true;
      try {
        await callJson('POST', `/api/agent/sessions/${s.sessionId}/refine`, {body: {message: message.value}});
        current.draft = '';
        await refresh();
        $('.review-card textarea', current.body).focus();
      } catch (err) {
        showError(cardErrors, err, 'refine');
      } finally {
        refineBtn.disabled = false;
      }
    });
    message.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        refineForm.requestSubmit();
      }
    });
    confirmBtn.addEventListener('click', async () => {
      clear(cardErrors);
      confirmBtn.disabled = true;
      try {
        // The exact version on the card: a plan changed meanwhile answers 409 PLAN_VERSION_MISMATCH.
        await callJson('POST', `/api/agent/sessions/${s.sessionId}/confirm`, {body: {planVersion: version}});
        follow();
      } catch (err) {
        showError(cardErrors, err, `confirm version ${version}`);
        confirmBtn.disabled = false;
      }
    });
    cancelBtn.addEventListener('click', () => cancel(cardErrors));
    return h('section', {class: 'card review-card', 'aria-label': `Plan version ${version} for review`},
      h('h4', {}, `Plan version ${version}: review it, refine it, or confirm this exact version`),
      h('ol', {class: 'plan-tasks'}, s.plan.tasks.map((t) => h('li', {'data-task-id': t.taskId},
        h('strong', {}, t.title), t.description ? h('div', {class: 'hint'}, t.description) : null))),
      refineForm, cardErrors);
  }

  async function cancel(where) {
    try {
      await callJson('POST', `/api/agent/sessions/${current.id}/cancel`, {body: {reason: 'cancelled in the console'}});
      await refresh();
      follow();
    } catch (err) {
      showError(where, err, 'cancel');
    }
  }

  function taskView(t) {
    return h('li', {class: `task task-${t.status}`, 'data-task-id': t.taskId, 'data-status': t.status},
      chip(t.status), ' ', h('strong', {}, t.title), t.acts ? h('span', {class: 'hint'}, ` · ${t.acts} acts`) : null,
      t.summary ? h('div', {class: 'task-summary'}, t.summary) : null,
      t.history.length ? h('details', {class: 'react'}, h('summary', {}, `ReAct history (${t.history.length})`),
        h('ol', {}, t.history.map((step) => h('li', {class: 'react-step'},
          h('div', {}, h('span', {class: 'label'}, 'reason: '), step.reason || ''),
          h('div', {}, h('span', {class: 'label'}, 'action: '), step.action.preview || step.action.tool),
          h('details', {}, h('summary', {}, 'observation'), h('pre', {}, json(step.observation, 1500))),
          step.reflection ? h('div', {}, h('span', {class: 'label'}, 'reflection: '),
            step.reflection.summary || json(step.reflection, 300)) : null)))) : null);
  }

  function draw(s) {
    const drawn = JSON.stringify(s);
    if (drawn === current.drawn) return; // nothing new: keep the page (and its focus) as it is
    if (current.status !== undefined && current.status !== s.status) showKnown(); // the list shows it too
    current.drawn = drawn;
    current.status = s.status;
    stopTicker();
    const body = current.body;
    clear(body);
    const left = h('span', {class: 'countdown', 'aria-live': 'off'}, ENDED.has(s.status) ? '' : countdown(s.deadline));
    body.append(
      h('dl', {class: 'facts'},
        h('dt', {}, 'status'), h('dd', {}, chip(s.status), s.cancelRequested ? ' (cancel requested)' : ''),
        h('dt', {}, 'objective'), h('dd', {}, s.prompt),
        h('dt', {}, 'deadline'), h('dd', {}, s.deadline, ' ', left),
        h('dt', {}, 'plan version'), h('dd', {}, String(s.plan.version)),
        s.cancelReason ? [h('dt', {}, 'cancel reason'), h('dd', {}, s.cancelReason)] : null,
        h('dt', {}, 'tokens'), h('dd', {}, `${s.usage.totalTokens} · estimated $${s.costUsd}`),
        s.error ? [h('dt', {}, 'error'), h('dd', {}, `${s.error.code}: ${s.error.message}`)] : null));
    if (!ENDED.has(s.status)) ticker = setInterval(() => { left.textContent = countdown(s.deadline); }, 1000);
    if (s.status === 'awaiting_confirmation') body.append(reviewCard(s));
    else if (!ENDED.has(s.status)) {
      const where = h('div', {class: 'errors'});
      body.append(h('div', {class: 'row'}, h('button', {type: 'button', class: 'reject', onclick: () => cancel(where)},
        'Cancel session')), where);
    }
    for (const a of s.pendingApprovals) {
      body.append(approvalCard(a, {onDecided: () => follow()}));
    }
    if (s.status !== 'awaiting_confirmation') {
      body.append(h('h4', {}, 'Tasks'), h('ol', {class: 'tasks'}, s.plan.tasks.map(taskView)));
      const workspaces = h('div', {class: 'session-workspaces'});
      body.append(workspaces);
      showWorkspaces(s, workspaces);
    }
    const versions = s.plan.versions || [];
    body.append(h('details', {class: 'versions', open: versions.length > 1},
      h('summary', {}, `Plan versions (${versions.length})`),
      h('ol', {}, versions.map((v) => h('li', {'data-version': v.version},
        h('strong', {}, `version ${v.version}`), ` · ${when(v.at)}`, v.reason ? ` · ${v.reason}` : '',
        h('ul', {}, v.changes.map((c) => h('li', {}, `${c.op}: ${c.what}`, c.why ? ` (why: ${c.why})` : ''))))))));
    if (s.result) {
      body.append(h('details', {class: 'result-log', open: true}, h('summary', {}, `Final log (${s.result.status})`),
        h('ol', {}, (s.result.log || []).filter((l) => l.tool !== 'task_done').map((l) => h('li',
          {'data-outcome': l.outcome}, `${l.taskId} · ${l.tool} · ${l.outcome} · ${JSON.stringify(l.arguments)}`)))));
    }
  }

  function fileBrowser(container) {
    const view = h('div', {class: 'workspace-files'});
    const shown = h('pre', {class: 'workspace-file', hidden: true});
    async function openFile(path) {
      try {
        const got = await callJson('GET', `/api/agent/containers/${encodeURIComponent(container.containerId)}/files` +
          `?path=${encodeURIComponent(path)}`, {signal: loads.signal});
        shown.hidden = false;
        shown.dataset.path = path;
        shown.textContent = got.file.binary ? `(binary, ${got.file.size} bytes)` :
          got.file.content + (got.file.truncated ? '\n[…]' : '');
      } catch (exc) { showError(view, exc); }
    }
    async function list() {
      try {
        const got = await callJson('GET', `/api/agent/containers/${encodeURIComponent(container.containerId)}/files`,
          {signal: loads.signal});
        clear(view);
        append(view, h('ul', {class: 'file-list'}, got.files.map((f) => h('li', {},
          h('a', {href: '#', 'data-path': f.path, onclick: (e) => { e.preventDefault(); openFile(f.path); }}, f.path),
          h('span', {class: 'hint'}, ` · ${f.size} B`)))),
        got.truncated ? h('div', {class: 'hint'}, 'more files not shown') : null, shown);
      } catch (exc) { showError(view, exc); }
    }
    return h('li', {'data-container-id': container.containerId},
      h('details', {ontoggle: (e) => { if (e.target.open && !view.childElementCount) list(); }},
        h('summary', {}, h('code', {}, container.containerId), container.repo ? ` · ${container.repo}` : '',
          container.group ? ` · ${container.group}` : '', ' (files, read-only)'), view));
  }

  async function showWorkspaces(s, where) {
    if (!s.runId) return;
    try {
      const {containers} = await callJson('GET', '/api/agent/containers', {signal: loads.signal});
      const mine = containers.filter((c) => c.runId === s.runId);
      clear(where);
      if (mine.length) where.append(h('h4', {}, 'Workspaces'), h('ul', {class: 'workspaces'}, mine.map(fileBrowser)));
    } catch (exc) { showError(where, exc); }
  }

  let latest = 0;

  async function refresh() {
    const mine = ++latest; // answers can arrive out of order: an older one is never drawn over a newer one
    const s = await callJson('GET', `/api/agent/sessions/${encodeURIComponent(current.id)}`, {signal: loads.signal});
    if (mine === latest) draw(s);
    return s;
  }

  function scheduleRefresh() {
    if (current.refreshing) return;
    current.refreshing = setTimeout(async () => {
      current.refreshing = null;
      try {
        await refresh();
      } catch (err) {
        showError(current.errors, err, 'session');
      }
    }, 150);
  }

  /** Follow the session's events until it waits (for confirmation or an approval) or ends. */
  async function follow() {
    const session = current;
    try {
      for (;;) {
        let count = 0;
        await streamNdjson('GET', `/api/agent/sessions/${encodeURIComponent(session.id)}/events` +
          `?after=${session.lastSeq}&follow=1`, (ev) => {
          // stream_end (why the follow closed) repeats the last seq; heartbeats never reach here.
          if (typeof ev.seq !== 'number' || ev.seq <= session.lastSeq || ev.type === 'stream_end') return;
          count += 1;
          session.lastSeq = ev.seq;
          session.events.append(h('li', {class: `ev ev-${ev.type}`, 'data-seq': ev.seq},
            h('span', {class: 'seq'}, `#${ev.seq}`), ' ', h('span', {class: 'type'}, ev.type), ' ',
            h('span', {class: 'text'}, eventLine(ev))));
          scheduleRefresh();
        }, {signal: loads.signal});
        const s = await refresh();
        if (ENDED.has(s.status) || s.status === 'awaiting_confirmation' || s.pendingApprovals.length) return;
        if (count === 0) await new Promise((resolve) => setTimeout(resolve, 500));
      }
    } catch (err) {
      showError(session.errors, err, `events of ${session.id}`);
    }
  }

  function open(sessionId) {
    loads.abort();
    loads = new AbortController();
    stopTicker();
    clear(detail);
    const events = h('ol', {class: 'timeline', 'aria-label': 'Session events'});
    const body = h('div', {});
    const sessionErrors = h('div', {class: 'errors'});
    current = {id: sessionId, lastSeq: 0, events, body, errors: sessionErrors, refreshing: null, drawn: null,
      draft: ''};
    detail.append(h('section', {class: 'run-record session', 'data-session-id': sessionId,
      'aria-labelledby': 'plan-detail-title'},
    h('h3', {id: 'plan-detail-title', tabindex: '-1'}, `Session ${sessionId}`), sessionErrors, body,
    h('details', {class: 'session-events', open: true}, h('summary', {}, 'Events'), events)));
    $('#plan-detail-title').focus();
    refresh().then(() => {
      showKnown();
      return follow();
    }).catch((err) => showError(sessionErrors, err, `session ${sessionId}`));
  }

  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    clear(errors);
    const data = new FormData(form);
    const body = {prompt: String(data.get('prompt') || '')};
    const minutes = String(data.get('deadlineMinutes') || '').trim();
    if (minutes) body.deadline = new Date(Date.now() + Number(minutes) * 60000).toISOString();
    const tools = String(data.get('tools') || '').split(',').map((t) => t.trim()).filter(Boolean);
    if (tools.length) body.tools = tools;
    const button = form.querySelector('button[type=submit]');
    button.disabled = true;
    try {
      const created = await callJson('POST', '/api/agent/sessions', {body});
      if (!created.ok) { // 200 ok:false: the session exists, its planning failed
        showError(errors, {name: (created.error && created.error.code) || 'PLANNING_FAILED',
          message: (created.error && created.error.message) || `session ${created.sessionId} failed to plan`});
      }
      form.reset();
      location.hash = `#/plans/${created.sessionId}`;
    } catch (err) {
      showError(errors, err, 'start a session');
    } finally {
      button.disabled = false;
    }
  });

  openForm.addEventListener('submit', (e) => {
    e.preventDefault();
    const id = $('#plans-open-id').value.trim();
    if (id) location.hash = `#/plans/${id}`;
  });

  return {
    show(sessionId) {
      showKnown();
      if (sessionId && (!current || current.id !== sessionId)) open(sessionId);
      if (!sessionId) {
        loads.abort();
        stopTicker();
        current = null;
        clear(detail);
      }
    },
    userChanged() {
      current = null;
    },
  };
}
