"""``A2A_AGENTS``: remote A2A agents of the deployment, refused at startup when malformed."""

from __future__ import annotations

import pytest

from shared.config import A2aAgent, Settings
from shared.errors import ConfigurationError
from shared.tools.a2a_tools import agent_tools
from shared.tools.registry import ToolRegistry


def test_agents_are_read_with_their_headers_and_side_effects(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("A2A_AGENTS", '[{"name": "travel", "url": "https://travel.example/", '
                                     '"headers": {"Authorization": "Bearer t"}}, '
                                     '{"name": "facts", "url": "http://127.0.0.1:9", "sideEffects": false}]')
    agents = Settings.from_env().a2a_agents
    assert agents == (A2aAgent("travel", "https://travel.example", (("Authorization", "Bearer t"),)),
                      A2aAgent("facts", "http://127.0.0.1:9", (), side_effects=False))
    registry = ToolRegistry()
    for agent in agents:
        for tool in agent_tools(agent, Settings()):
            registry.add(tool)
    sides = {t.name: (t.side_effect, t.reconcile_fn is not None) for t in registry}
    assert sides == {"travel_send_message": (True, True), "travel_get_task": (False, False),
                     "facts_send_message": (False, False), "facts_get_task": (False, False)}
    send = registry.get("travel_send_message")
    assert send is not None
    assert send.preview(send.validate({"message": "book it", "agentTaskId": "t-1"})) == \
        "Message to A2A agent travel (answer to its task t-1): book it"


@pytest.mark.parametrize("raw", ['{"name": "x"}', '[{"name": "bad name", "url": "http://a"}]',
                                 '[{"name": "a", "url": "ftp://a"}]', '[{"name": "a", "url": "http://a", "x": 1}]',
                                 '[{"name": "a", "url": "http://a"}, {"name": "a", "url": "http://b"}]',
                                 '[{"name": "a", "url": "http://a", "sideEffects": "no"}]', "not json"])
def test_a_malformed_list_stops_startup(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv("A2A_AGENTS", raw)
    with pytest.raises(ConfigurationError, match="A2A_AGENTS"):
        Settings.from_env()
