// Integrations: GET /api/integrations (status, never a token), POST /api/integrations/{provider}
// to connect with tokens (the local fakes'), DELETE to disconnect; the user's MCP servers below
// (./mcp_servers.js).

import {callJson} from '../api.js';
import {$, clear, h, when} from '../dom.js';
import {showError} from '../errors.js';
import {mountMcpServers} from './mcp_servers.js';
import {mountRunControl} from './run_control.js';

export function mountIntegrations() {
  const status = $('#integrations-status');
  const errors = $('#integrations-errors');
  const form = $('#integrations-form');
  const mcpServers = mountMcpServers();
  const runControl = mountRunControl();

  async function disconnect(provider) {
    clear(errors);
    try {
      await callJson('DELETE', `/api/integrations/${provider}`);
    } catch (err) {
      showError(errors, err, `disconnect ${provider}`);
    }
    await refresh();
  }

  async function refresh() {
    let body;
    try {
      body = await callJson('GET', '/api/integrations');
    } catch (err) {
      clear(status);
      showError(errors, err, 'integrations');
      return;
    }
    clear(status);
    // The providers the API knows, as it lists them (new ones appear without a console change).
    const select = $('#int-provider');
    const chosen = select.value;
    select.replaceChildren(...body.integrations.map((i) => h('option', {value: i.provider}, i.provider)));
    if (body.integrations.some((i) => i.provider === chosen)) select.value = chosen;
    status.append(h('div', {class: 'table-wrap'}, h('table', {class: 'integrations-table'},
      h('thead', {}, h('tr', {}, ['provider', 'status', 'scopes', 'account', 'expires', 'stored', '']
        .map((c) => h('th', {scope: 'col'}, c)))),
      h('tbody', {}, body.integrations.map((i) => h('tr', {'data-provider': i.provider},
        h('td', {}, i.provider),
        h('td', {}, h('span', {class: `chip ${i.connected ? 'chip-completed' : 'chip-none'}`},
          i.connected ? 'connected' : 'not connected')),
        h('td', {}, (i.scopes || []).join(', ')), h('td', {}, i.accountEmail || ''),
        h('td', {}, when(i.expiresAt)), h('td', {}, when(i.updatedAt)),
        h('td', {}, i.connected ? h('button', {type: 'button', onclick: () => disconnect(i.provider)},
          `Disconnect ${i.provider}`) : '')))))));
  }

  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    clear(errors);
    const data = new FormData(form);
    const provider = data.get('provider');
    const body = {accessToken: data.get('accessToken')};
    for (const name of ['refreshToken', 'accountEmail', 'teamId']) {
      const value = String(data.get(name) || '').trim();
      if (value) body[name] = value;
    }
    const expiresIn = String(data.get('expiresIn') || '').trim();
    if (expiresIn) body.expiresIn = Number(expiresIn);
    const scopes = String(data.get('scopes') || '').split(',').map((s) => s.trim()).filter(Boolean);
    if (scopes.length) body.scopes = scopes;
    try {
      await callJson('POST', `/api/integrations/${provider}`, {body});
      form.reset();
    } catch (err) {
      showError(errors, err, `connect ${provider}`);
    }
    await refresh();
  });

  return {
    show() {
      clear(errors);
      refresh();
      mcpServers.show();
      runControl.show();
    },
    userChanged() {},
  };
}
