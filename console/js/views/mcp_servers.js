// The user's own MCP servers, part of the Integrations view: GET /api/integrations/mcp (name, the
// URL as the API shows it, whether a token is stored: never the token), each server's tools from
// GET /api/integrations/mcp/{name}/tools (what the model calls them, their descriptions, side
// effect or read-only), POST /api/integrations/mcp/{name} to add one, DELETE to remove it.

import {callJson} from '../api.js';
import {$, clear, h, when} from '../dom.js';
import {showError} from '../errors.js';

function toolsList(body) {
  if (!body.available) { // why, by class: MCP_AUTH_FAILED, MCP_UNREACHABLE, MCP_TIMEOUT, MCP_PROTOCOL_ERROR
    return h('p', {class: 'mcp-unavailable hint', 'data-error-code': body.errorCode || ''},
      body.errorCode ? h('span', {class: 'chip chip-failed mcp-error-code'}, body.errorCode) : null, ' ',
      `tools not available: ${body.error || 'the server could not be listed'}`);
  }
  if (!body.tools.length) return h('p', {class: 'hint'}, 'no tools');
  return h('ul', {class: 'mcp-tools'}, body.tools.map((t) => h('li', {'data-tool': t.name},
    h('code', {class: 'mcp-tool-name', title: `the server calls it ${t.tool}`}, t.name), ' ',
    h('span', {class: `chip ${t.sideEffect ? 'chip-awaiting_confirmation' : 'chip-completed'}`,
      'data-side-effect': String(t.sideEffect)},
    t.sideEffect ? (t.idempotent ? 'side effect (idempotent)' : 'side effect') : 'read-only'), ' ',
    h('span', {class: 'mcp-tool-description'}, t.description))));
}

/** The deployment's servers (MCP_SERVERS): read-only here, with their tools (listed by the API). */
function deploymentTable(servers) {
  return h('section', {class: 'mcp-deployment', 'aria-label': 'Deployment MCP servers'},
    h('p', {class: 'hint'}, 'The deployment\'s servers (MCP_SERVERS, read-only): their tools join every run.'),
    h('div', {class: 'table-wrap'}, h('table', {class: 'mcp-table'},
      h('thead', {}, h('tr', {}, ['name', 'transport', 'URL', 'tools'].map((c) => h('th', {scope: 'col'}, c)))),
      h('tbody', {}, servers.map((s) => h('tr', {'data-deployment-server': s.name},
        h('td', {}, s.name), h('td', {}, s.transport), h('td', {class: 'mcp-url'}, s.url || ''),
        h('td', {class: 'mcp-tools-cell'}, toolsList(s))))))));
}

export function mountMcpServers() {
  const status = $('#mcp-status');
  const errors = $('#mcp-errors');
  const form = $('#mcp-form');

  async function remove(name) {
    clear(errors);
    try {
      await callJson('DELETE', `/api/integrations/mcp/${encodeURIComponent(name)}`);
    } catch (err) {
      showError(errors, err, `remove MCP server ${name}`);
    }
    await refresh();
  }

  async function loadTools(name, cell) {
    try {
      const body = await callJson('GET', `/api/integrations/mcp/${encodeURIComponent(name)}/tools`);
      cell.replaceChildren(toolsList(body));
    } catch (err) {
      cell.replaceChildren();
      showError(errors, err, `tools of ${name}`);
    }
  }

  async function refresh() {
    let body;
    try {
      body = await callJson('GET', '/api/integrations/mcp');
    } catch (err) {
      clear(status);
      showError(errors, err, 'MCP servers');
      return;
    }
    clear(status);
    if (body.deployment && body.deployment.length) status.append(deploymentTable(body.deployment));
    if (!body.servers.length) {
      status.append(h('p', {class: 'hint mcp-none'}, 'No MCP server yet.'));
      return;
    }
    const rows = body.servers.map((s) => {
      const tools = h('td', {class: 'mcp-tools-cell'}, h('span', {class: 'hint'}, 'listing…'));
      loadTools(s.name, tools);
      return h('tr', {'data-server': s.name},
        h('td', {}, s.name), h('td', {class: 'mcp-url'}, s.url || ''),
        h('td', {class: 'mcp-token'}, s.hasToken ? 'token set' : 'no token'),
        h('td', {}, h('span', {class: `chip ${s.connected ? 'chip-completed' : 'chip-none'}`},
          s.connected ? 'connected' : 'not connected')),
        tools, h('td', {}, when(s.updatedAt)),
        h('td', {}, h('button', {type: 'button', onclick: () => remove(s.name)}, `Remove ${s.name}`)));
    });
    status.append(h('div', {class: 'table-wrap'}, h('table', {class: 'mcp-table'},
      h('thead', {}, h('tr', {}, ['name', 'URL', 'token', 'status', 'tools', 'stored', '']
        .map((c) => h('th', {scope: 'col'}, c)))),
      h('tbody', {}, rows))));
  }

  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    clear(errors);
    const data = new FormData(form);
    const name = String(data.get('name') || '').trim();
    const body = {url: String(data.get('url') || '').trim()};
    const token = String(data.get('accessToken') || '').trim();
    if (token) body.accessToken = token;
    try {
      await callJson('POST', `/api/integrations/mcp/${encodeURIComponent(name)}`, {body});
      form.reset();
    } catch (err) {
      showError(errors, err, `add MCP server ${name}`);
    }
    await refresh();
  });

  return {
    show() {
      clear(errors);
      refresh();
    },
  };
}
