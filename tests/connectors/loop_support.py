"""Driving a connector tool through the agent loop in tests: start a run, deliver the resume
messages (duplicated, as Pub/Sub may)."""

from __future__ import annotations

from shared.api import RunRequest
from shared.runtime import Runtime
from shared.state.records import RunResult


def start(rt: Runtime, prompt: str, uid: str = "alice") -> RunResult:
    started = rt.agent.start(uid, RunRequest(prompt=prompt))
    return rt.agent.run(rt.agent.context(started))
