"""Functions that never call the model must not import google-genai: approve, resume (while it
does not need the model) and runs each serve one real request in a fresh process that has a
Gemini API key configured (so a model created by mistake would import the SDK), then report
whether ``google.genai`` is in ``sys.modules``."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from bench.coldstart import pubsub_event
from bench.scenario import bench_settings
from shared.api import RunRequest
from shared.durable.dispatcher import RecordingDispatcher
from shared.models.scripted import ScriptedModel, call, calls_turn
from shared.runtime import Runtime
from shared.state.sqlite_docstore import SqliteDocStore


def _paused_runs(path: str) -> list[tuple[str, str]]:
    """Two runs paused on a ``save_memory`` approval: [(run id, approval id), ...]."""
    store = SqliteDocStore(path)
    try:
        model = ScriptedModel([calls_turn(call("save_memory", {"text": "Alice likes tea"})) for _ in range(2)])
        rt = Runtime(bench_settings(), store=store, model=model, dispatcher=RecordingDispatcher())
        out = []
        for _ in range(2):
            started = rt.agent.start("alice", RunRequest(prompt="remember that I like tea"))
            result = rt.agent.run(rt.agent.context(started))
            assert result.approval is not None, result
            out.append((result.run_id, result.approval.id))
        return out
    finally:
        store.close()


def _check(env: dict[str, str], target: str, signature: str, method: str, path: str, body: str) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-m", "bench.probe", "check", target, signature, method, path, body],
                         env=env, capture_output=True, text=True, timeout=120, check=False)
    if out.returncode != 0:
        return {"error": out.stderr[-1500:]}
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def run_checks(sqlite_path: str, env: dict[str, str]) -> dict[str, Any]:
    (run_a, approval_a), (run_b, _) = _paused_runs(sqlite_path)
    env = {**env, "STATE_BACKEND": "sqlite", "SQLITE_PATH": sqlite_path, "DISPATCHER": "none"}
    headers, data = pubsub_event({"runId": run_b, "uid": "alice"})
    return {
        "approve": {"request": "approve a pending save_memory approval (202)",
                    **_check(env, "approve", "http", "POST", "/api/agent/approve",
                             json.dumps({"approvalId": approval_a, "decision": "approve"}))},
        "resume": {"request": "Pub/Sub CloudEvent for a run still waiting for its approval",
                   **_check(env, "resume", "cloudevent", "POST", "/",
                            json.dumps({"headers": headers, "data": data}))},
        "runs": {"request": "GET the run record",
                 **_check(env, "runs", "http", "GET", f"/api/agent/runs/{run_a}", "")},
    }
