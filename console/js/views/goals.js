// Goals playground: POST /agent/run (seed 000), as the backend calls it (no user token), for the dev
// user chosen at the top (its userId). Each answer's state, with the previewed plan as
// state.proposed_plan, is what the next message sends.

import {ApiError, callJson, currentUser} from '../api.js';
import {$, h, json, parts, submitOnEnter} from '../dom.js';
import {showError} from '../errors.js';

function planView(preview) {
  return h('div', {class: 'plan'},
    h('p', {class: 'plan-goal'}, h('strong', {}, preview.goal.title),
      preview.goal.targetDate ? ` (by ${preview.goal.targetDate})` : ''),
    h('ol', {class: 'milestones'}, (preview.milestones || []).map((m) => h('li', {},
      m.title, m.dueDate ? ` (due ${m.dueDate})` : '',
      m.tasks && m.tasks.length ? h('ul', {}, m.tasks.map((t) => h('li', {}, t.title,
        t.start ? ` · ${t.start} – ${t.end}` : '', t.dueDate ? ` · due ${t.dueDate}` : ''))) : null))));
}

function parseField(textarea, name) {
  const text = textarea.value.trim();
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch (exc) {
    throw new ApiError(0, 'INVALID_JSON_INPUT', `${name} is not valid JSON (${exc.message}); nothing was sent`);
  }
}

export function mountGoals() {
  const {form, user, session, context, state, log, errors, message} =
    parts('goals', 'form', 'user', 'session', 'context', 'state', 'log', 'errors', 'message');
  const newSession = () => {
    session.value = `sess_${Math.random().toString(16).slice(2, 10)}`;
    state.value = '';
    log.replaceChildren();
  };
  const signedIn = () => { user.value = currentUser(); }; // the playground speaks for the dev user chosen at the top
  signedIn();
  newSession();

  async function send() {
    errors.replaceChildren();
    const text = message.value;
    let body;
    try {
      body = {message: text, userId: user.value || undefined, sessionId: session.value || undefined,
        context: parseField(context, 'context'), state: parseField(state, 'state')};
    } catch (err) {
      showError(errors, err);
      return;
    }
    log.append(h('div', {class: 'bubble user'}, h('span', {class: 'who'}, 'you'), text));
    log.scrollTop = log.scrollHeight;
    let resp;
    try {
      resp = await callJson('POST', '/agent/run', {body, auth: false});
    } catch (err) {
      showError(errors, err, 'goals agent');
      return;
    }
    message.value = '';
    const previous = body.state || {};
    const next = {...resp.state};
    if (resp.action.type === 'save_preview') next.proposed_plan = resp.action.payload.goalPreview;
    else if (previous.proposed_plan) next.proposed_plan = previous.proposed_plan;
    state.value = JSON.stringify(next, null, 2);
    const payload = resp.action.payload;
    log.append(h('div', {class: 'bubble agent goals-answer', 'data-action': resp.action.type},
      h('span', {class: 'who'}, 'goals agent'),
      h('p', {class: 'reply'}, resp.reply),
      h('p', {class: 'meta'}, 'action ', h('code', {class: 'action-type'}, resp.action.type),
        ` · state ${resp.state.step}, iteration ${resp.state.iteration}, sessionActive ${resp.state.sessionActive}`),
      resp.action.type === 'save_preview' ? planView(payload.goalPreview) : null,
      resp.action.type === 'finalize_goal' ? planView({goal: payload.goal, milestones: payload.milestones}) : null,
      h('details', {}, h('summary', {}, 'raw answer'), h('pre', {}, json(resp)))));
    log.scrollTop = log.scrollHeight;
  }

  form.addEventListener('submit', (e) => {
    e.preventDefault();
    send();
  });
  submitOnEnter(message, form);
  $('#goals-new').addEventListener('click', () => {
    newSession();
    message.focus();
  });
  return {
    show() {},
    userChanged() {
      signedIn();
      newSession(); // another user's conversation state is not carried over
    },
  };
}
