// The console shell: the dev user (its Bearer dev:<uid> token), the views and a hash router
// (#/chat, #/approvals, #/plans[/<sessionId>], #/runs[/<runId>], #/usage, #/integrations, #/goals).

import {currentUser, knownUsers, setUser} from './api.js';
import {$, clear, h} from './dom.js';
import {showError} from './errors.js';
import {mountApprovals} from './views/approvals.js';
import {mountChat} from './views/chat.js';
import {mountGoals} from './views/goals.js';
import {mountIntegrations} from './views/integrations.js';
import {mountPlans} from './views/plans.js';
import {mountRuns} from './views/runs.js';
import {mountUsage} from './views/usage.js';

const globalErrors = $('#global-errors');
window.addEventListener('unhandledrejection', (e) => showError(globalErrors, e.reason, 'unexpected'));
window.addEventListener('error', (e) => showError(globalErrors, e.error || e.message, 'unexpected'));

const views = {
  chat: mountChat(), approvals: mountApprovals(), plans: mountPlans(), runs: mountRuns(), usage: mountUsage(),
  integrations: mountIntegrations(), goals: mountGoals(),
};

function showUser() {
  const uid = currentUser();
  $('#dev-user').value = uid;
  $('#dev-user-token').textContent = `Authorization: Bearer dev:${uid}`;
  const list = clear($('#dev-users'));
  for (const u of knownUsers()) list.append(h('option', {value: u}));
}

function route({focus = false} = {}) {
  const [name, arg] = (location.hash.replace(/^#\/?/, '') || 'chat').split('/');
  const view = views[name] ? name : 'chat';
  for (const section of document.querySelectorAll('.view')) section.hidden = section.id !== `view-${view}`;
  for (const link of document.querySelectorAll('nav.views a')) {
    if (link.dataset.view === view) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  document.title = `${$(`#view-${view} h2`).textContent} · Agent Runtime dev console`;
  views[view].show(arg ? decodeURIComponent(arg) : undefined);
  if (focus) {
    const heading = $(`#view-${view} h2`);
    heading.setAttribute('tabindex', '-1');
    heading.focus();
  }
}

$('#user-form').addEventListener('submit', (e) => {
  e.preventDefault();
  const input = $('#dev-user');
  if (!input.reportValidity()) return;
  setUser(input.value.trim());
  showUser();
  for (const v of Object.values(views)) v.userChanged();
  route();
});

showUser();
window.addEventListener('hashchange', () => route({focus: true}));
route();
document.body.dataset.ready = 'true';
