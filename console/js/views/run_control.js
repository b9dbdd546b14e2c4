// Webhooks and schedules, part of the Integrations view (docs/run-control.md): GET/PUT/DELETE
// /api/agent/webhooks/{name} (the signing secret is shown once, in the PUT answer), each webhook's
// deliveries (GET .../deliveries), and GET/PUT/DELETE /api/agent/schedules/{name} with the runs
// each schedule started (GET .../runs).

import {callJson} from '../api.js';
import {$, clear, h, when} from '../dom.js';
import {showError} from '../errors.js';

function table(cls, columns, rows) {
  return h('div', {class: 'table-wrap'}, h('table', {class: cls},
    h('thead', {}, h('tr', {}, columns.map((c) => h('th', {scope: 'col'}, c)))),
    h('tbody', {}, rows)));
}

function chip(status) {
  return h('span', {class: `chip chip-${status}`}, status);
}

function mountList({kind, collection, status, errors, form, row, columns, submit, details}) {
  async function remove(name) {
    clear(errors);
    try {
      await callJson('DELETE', `${collection}/${encodeURIComponent(name)}`);
    } catch (err) {
      showError(errors, err, `remove ${kind} ${name}`);
    }
    await refresh();
  }

  async function refresh() {
    let body;
    try {
      body = await callJson('GET', collection);
    } catch (err) {
      clear(status);
      showError(errors, err, `${kind}s`);
      return;
    }
    clear(status);
    const items = body[`${kind}s`];
    if (!items.length) {
      status.append(h('p', {class: `hint ${kind}-none`}, `No ${kind} yet.`));
      return;
    }
    status.append(table(`${kind}-table`, [...columns, ''], items.map((item) => {
      const more = h('td', {class: `${kind}-details`}, h('span', {class: 'hint'}, 'loading…'));
      details(item, more, errors);
      return h('tr', {[`data-${kind}`]: item.name}, ...row(item), more,
        h('td', {}, h('button', {type: 'button', onclick: () => remove(item.name)}, `Remove ${item.name}`)));
    })));
  }

  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    clear(errors);
    const data = new FormData(form);
    const name = String(data.get('name') || '').trim();
    try {
      const answer = await callJson('PUT', `${collection}/${encodeURIComponent(name)}`, {body: submit(data)});
      form.reset();
      if (answer.secret) {
        errors.append(h('p', {class: 'webhook-secret hint'}, `Signing secret of ${name} (shown once): `,
          h('code', {}, answer.secret)));
      }
    } catch (err) {
      showError(errors, err, `save ${kind} ${name}`);
    }
    await refresh();
  });
  return refresh;
}

export function mountRunControl() {
  const webhooks = mountList({
    kind: 'webhook', collection: '/api/agent/webhooks', status: $('#webhooks-status'), errors: $('#webhooks-errors'),
    form: $('#webhooks-form'), columns: ['name', 'URL', 'events', 'stored', 'deliveries'],
    row: (w) => [h('td', {}, w.name), h('td', {class: 'webhook-url'}, w.url || ''),
      h('td', {class: 'webhook-events'}, (w.events || []).join(', ')), h('td', {}, when(w.updatedAt))],
    submit: (data) => {
      const body = {url: String(data.get('url') || '').trim(),
        events: String(data.get('events') || '').split(',').map((s) => s.trim()).filter(Boolean)};
      const secret = String(data.get('secret') || '').trim();
      if (secret) body.secret = secret;
      return body;
    },
    details: async (w, cell, errors) => {
      try {
        const body = await callJson('GET', `/api/agent/webhooks/${encodeURIComponent(w.name)}/deliveries`);
        cell.replaceChildren(body.deliveries.length ? h('ul', {class: 'deliveries'}, body.deliveries.map((d) =>
          h('li', {'data-delivery': d.deliveryId}, chip(d.status), ' ', h('code', {}, d.eventType),
            ` ${d.attempts} attempt(s)`, d.runId ? ` · run ${d.runId}` : ''))) : h('span', {class: 'hint'}, 'none yet'));
      } catch (err) {
        cell.replaceChildren();
        showError(errors, err, `deliveries of ${w.name}`);
      }
    },
  });
  const schedules = mountList({
    kind: 'schedule', collection: '/api/agent/schedules', status: $('#schedules-status'),
    errors: $('#schedules-errors'), form: $('#schedules-form'),
    columns: ['name', 'cron', 'time zone', 'prompt', 'next run', 'runs'],
    row: (s) => [h('td', {}, s.name), h('td', {}, h('code', {}, s.cron || '')), h('td', {}, s.timezone || ''),
      h('td', {class: 'schedule-prompt'}, s.prompt || (s.session ? `session: ${s.session.prompt}` : '')), h('td', {class: 'schedule-next'}, when(s.nextRunAt))],
    submit: (data) => {
      const body = {cron: String(data.get('cron') || '').trim(), prompt: String(data.get('prompt') || '').trim(),
        timezone: String(data.get('timezone') || '').trim() || 'UTC'};
      const thread = String(data.get('threadId') || '').trim();
      if (thread) body.threadId = thread;
      return body;
    },
    details: async (s, cell, errors) => {
      try {
        const body = await callJson('GET', `/api/agent/schedules/${encodeURIComponent(s.name)}/runs`);
        cell.replaceChildren(body.runs.length ? h('ul', {class: 'schedule-runs'}, body.runs.map((r) =>
          h('li', {'data-run': r.runId || r.sessionId}, when(r.occurrence), ' ', chip(r.status || 'unknown'),
            ` ${r.runId || r.sessionId}`)))
          : h('span', {class: 'hint'}, 'none yet'));
      } catch (err) {
        cell.replaceChildren();
        showError(errors, err, `runs of ${s.name}`);
      }
    },
  });
  return {
    show() {
      clear($('#webhooks-errors'));
      clear($('#schedules-errors'));
      webhooks();
      schedules();
    },
  };
}
