"""Issue 14 item 6: an unexpected tool exception is logged with its type and frames, never its text
(which may quote argument values: user data)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from shared.api import RunRequest
from shared.models.scripted import ScriptedModel, call, calls_turn, text_turn
from shared.tools import default_registry
from shared.tools.context import ToolContext
from tests.agent.conftest import MakeRuntime


def test_a_tool_exception_is_logged_without_its_text(make_runtime: MakeRuntime,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    registry = default_registry()

    @registry.tool(side_effect=False)
    def lookup_account(ctx: ToolContext, pin: str) -> dict[str, Any]:
        """Look an account up.

        Args:
            pin: The account PIN.
        """
        raise ValueError(f"could not find the account with PIN {pin}")

    rt = make_runtime(ScriptedModel([calls_turn(call("lookup_account", {"pin": "secret-1234"})), text_turn("ok")]))
    rt.registry = registry
    with caplog.at_level(logging.DEBUG, logger="agent_runtime"):
        started = rt.agent.start("alice", RunRequest(prompt="find it"))
        result = rt.agent.run(rt.agent.context(started))
    assert result.status == "completed"
    [action] = rt.runs.list_actions(result.run_id)
    assert action.error == "the tool failed unexpectedly (ValueError)"
    [record] = [r for r in caplog.records if "failed unexpectedly" in r.getMessage()]
    assert record.levelno == logging.ERROR and record.exc_info is None
    assert getattr(record, "fields", {})["frames"]  # where it failed, without the message
    assert not any("secret-1234" in r.getMessage() or "secret-1234" in str(getattr(r, "fields", ""))
                   for r in caplog.records)
