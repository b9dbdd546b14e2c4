"""A user's own remote A2A agents: ``/api/integrations/a2a/{name}`` (docs/a2a.md, "Remote agents as
tools"). Kept like a user's MCP servers (``shared/connectors/user_mcp.py``): the URL (the agent's
base URL, where its card is) and an optional bearer token sealed together, the URL checked for
public addresses when stored and before every call (unless ``MCP_ALLOW_PRIVATE_URLS``), answers
without the URL's query and never the token. The agent's tools (``{name}_send_message``, a side
effect, and ``{name}_get_task``) join that user's runs only (``Runtime.registry_for``)."""

from __future__ import annotations

from shared.config import A2aAgent
from shared.connectors.user_mcp import UserEndpoints
from shared.state.mcp_servers_repo import A2aAgentsRepo

LABEL = "A2A agent"


class UserA2aAgents(UserEndpoints[A2aAgent]):
    repo_type = A2aAgentsRepo
    label = LABEL
    noun = "A2A agents"
    too_many = "TOO_MANY_A2A_AGENTS"

    def _endpoint(self, name: str, url: str, headers: tuple[tuple[str, str], ...]) -> A2aAgent:
        return A2aAgent(name=name, url=url.rstrip("/"), headers=headers, side_effects=True,
                        public_only=not self._allow_private)
