"""The container tools through the real loop, the real store and the sandbox service as its own
process: approvals bound to the arguments with the exact script in the preview, the per-user
limit, a script cut off by a crash never run again, the sweep, and the routes."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.instrument import Crash, CrashAt
from devserver import create_app
from shared.agent.approvals import decide
from shared.api import ApproveRequest
from shared.auth import LocalAuthenticator
from shared.durable.dispatcher import RecordingDispatcher
from shared.models.base import ModelRequest, ModelResponse, Turn
from shared.models.scripted import FunctionModel, ScriptedModel, call, calls_turn, text_turn
from shared.runtime import Runtime, set_runtime
from shared.state.docstore import DocStore
from shared.state.records import RunResult, UserRecord
from shared.state.workspaces_repo import WorkspacesRepo
from tests.agent.conftest import make_settings
from tests.connectors.loop_support import start
from tests.connectors.test_reconciliation import AFTER_SIDE_EFFECT, recover
from tests.messages import deliver_published as deliver
from tests.sandbox.support import SandboxProcess

UID = "alice"


def runtime(store: DocStore, sandbox: SandboxProcess, model: Any, *, trust: str = "supervised",
            **overrides: Any) -> Runtime:
    settings = make_settings(sandbox_url=sandbox.url, sandbox_key=sandbox.key, **overrides)
    rt = Runtime(settings, store=store, model=model, dispatcher=RecordingDispatcher(),
                 authenticator=LocalAuthenticator())
    rt.users.put_user(UserRecord(uid=UID, trust_level=trust))  # type: ignore[arg-type]
    return rt


def approve(rt: Runtime, result: RunResult) -> None:
    assert result.status == "awaiting_confirmation" and result.approval is not None, result
    decide(rt.services, rt.dispatcher, UID, ApproveRequest(approvalId=result.approval.id, decision="approve"))
    deliver(rt, copies=2)  # Pub/Sub may deliver twice: the claim makes it once


def latest(rt: Runtime, run_id: str) -> RunResult:
    snap = rt.runs.get_run(run_id)
    assert snap is not None and snap.run.result is not None
    return snap.run.result


SCRIPT = "echo built > out.txt && cat out.txt"


def _coder(request: ModelRequest) -> Turn | ModelResponse:
    answered = {p.function_response.name: p.function_response.response
                for t in request.turns for p in t.parts if p.function_response}
    if "container_read_file" in answered:
        return text_turn(f"read {answered['container_read_file'].get('content', answered['container_read_file'])!r}")
    if "container_exec" in answered:
        wid = answered["container_create"]["containerId"]
        return calls_turn(call("container_read_file", {"containerId": wid, "path": "out.txt"}))
    if "container_create" in answered:
        wid = answered["container_create"]["containerId"]
        return calls_turn(call("container_exec", {"containerId": wid, "script": SCRIPT, "timeoutS": 30}))
    return calls_turn(call("container_create", {"group": "build"}))


def test_side_effects_are_approved_with_the_exact_script_then_run_in_the_sandbox(
        store: DocStore, sandbox: SandboxProcess) -> None:
    rt = runtime(store, sandbox, FunctionModel(_coder))
    first = start(rt, "build it")
    assert first.approval is not None and first.approval.tool == "container_create"
    approve(rt, first)
    second = latest(rt, first.run_id)
    assert second.approval is not None and second.approval.tool == "container_exec"
    assert SCRIPT in second.approval.preview and "up to 30 s" in second.approval.preview
    approve(rt, second)
    done = latest(rt, first.run_id)
    assert done.status == "completed" and done.summary == "read 'built\\n'", done
    actions = {a.tool: a for a in rt.runs.list_actions(first.run_id)}
    assert actions["container_exec"].result is not None
    assert actions["container_exec"].result["exitCode"] == 0 and actions["container_exec"].result["stdout"] == "built\n"
    assert actions["container_exec"].attempts == 1
    (record,) = WorkspacesRepo(store).live_of(UID)
    assert record.group == "build" and record.run_id == first.run_id


def test_a_script_cut_off_by_a_crash_is_unknown_and_never_run_again(store: DocStore, sandbox: SandboxProcess) -> None:
    box = sandbox.client()
    seed_rt = runtime(store, sandbox, ScriptedModel([calls_turn(call("container_create", {})), text_turn("ok")]),
                      trust="autonomous")
    made = start(seed_rt, "make one")
    wid = next(a.result for a in seed_rt.runs.list_actions(made.run_id) if a.tool == "container_create")["containerId"]
    WorkspacesRepo(store).update(wid, keep=True)  # outlives the run that made it (else the sweep destroys it)

    chaos = CrashAt(store)
    model = ScriptedModel([calls_turn(call("container_exec", {"containerId": wid, "script": "echo run >> runs.txt"})),
                           text_turn("Done.")])
    rt = runtime(chaos.store, sandbox, model, lease_ttl_s=0.2)  # type: ignore[arg-type]
    result = start(rt, "append")
    assert result.approval is not None
    decide(rt.services, rt.dispatcher, UID, ApproveRequest(approvalId=result.approval.id, decision="approve"))
    chaos.arm(*AFTER_SIDE_EFFECT)
    with pytest.raises(Crash):
        deliver(rt, copies=1)
    recover(rt)
    deliver(rt, copies=2)
    (action,) = rt.runs.list_actions(result.run_id)
    assert (action.status, action.outcome, action.attempts) == ("failed", "unknown", 1)
    assert box.read_file(wid, "runs.txt").content == "run\n"  # ran once, never again


def test_the_per_user_limit_is_told_to_the_model_with_its_code(store: DocStore, sandbox: SandboxProcess) -> None:
    model = ScriptedModel([calls_turn(call("container_create", {}), call("container_create", {"group": "a"}),
                                      call("container_create", {"group": "b"})), text_turn("ok")])
    rt = runtime(store, sandbox, model, trust="autonomous", workspaces_per_user=2)
    result = start(rt, "three please")
    assert result.status == "completed"
    outcomes = sorted((a.status, a.error or "") for a in rt.runs.list_actions(result.run_id))
    assert [s for s, _ in outcomes] == ["completed", "completed", "failed"]
    assert outcomes[-1][1].startswith("WORKSPACE_LIMIT_REACHED: you already hold 2 live workspaces")
    assert len(WorkspacesRepo(store).live_of(UID)) == 2


def test_paths_out_of_the_workspace_are_refused_before_anything_runs(store: DocStore, sandbox: SandboxProcess) -> None:
    model = ScriptedModel([calls_turn(call("container_read_file", {"containerId": "ws_0123456789abcdef0123",
                                                                   "path": "../../etc/passwd"})), text_turn("ok")])
    rt = runtime(store, sandbox, model, trust="autonomous")
    result = start(rt, "peek")
    (action,) = rt.runs.list_actions(result.run_id)
    assert action.status == "failed" and "not a path inside the workspace" in (action.error or "")


def test_the_sweep_destroys_idle_workspaces_and_those_of_ended_units_unless_kept(
        store: DocStore, sandbox: SandboxProcess) -> None:
    model = ScriptedModel([calls_turn(call("container_create", {}), call("container_create", {"group": "k"}),
                                      call("container_create", {"group": "idle"})), text_turn("ok")])
    rt = runtime(store, sandbox, model, trust="autonomous")
    result = start(rt, "three")
    assert result.status == "completed"  # the unit ended
    repo = WorkspacesRepo(store)
    by_group = {r.group: r for r in repo.live_of(UID)}
    repo.update(by_group["k"].workspace_id, keep=True)
    old = time.time() - 2 * 86400
    repo.update(by_group["idle"].workspace_id, keep=True, last_used_at=old)  # kept, but idle past the TTL
    rt.router.sweep()
    assert [r.group for r in repo.live_of(UID)] == ["k"]
    box = sandbox.client()
    assert box.info(by_group["k"].workspace_id)["quotaBytes"] > 0
    from shared.connectors.sandbox import SandboxError

    for gone in (by_group[None], by_group["idle"]):
        with pytest.raises(SandboxError):
            box.info(gone.workspace_id)


@pytest.fixture
def client(store: DocStore, sandbox: SandboxProcess) -> Iterator[Any]:
    rt = runtime(store, sandbox, ScriptedModel([calls_turn(call("container_create", {"group": "g"})),
                                                text_turn("ok")]), trust="autonomous")
    set_runtime(rt)
    start(rt, "make one")
    yield create_app().test_client()
    set_runtime(None)


def test_the_routes_list_and_destroy_only_the_callers_workspaces(client: Any, sandbox: SandboxProcess) -> None:
    alice, bob = {"Authorization": "Bearer dev:alice"}, {"Authorization": "Bearer dev:bob"}
    listed = client.get("/api/agent/containers", headers=alice).get_json()
    (mine,) = listed["containers"]
    assert mine["group"] == "g" and mine["createdAt"].endswith("Z")
    assert client.get("/api/agent/containers", headers=bob).get_json() == {"ok": True, "containers": [],
                                                                          "nextCursor": None}
    other = client.delete(f"/api/agent/containers/{mine['containerId']}", headers=bob)
    assert other.status_code == 404 and other.get_json()["error"]["code"] == "WORKSPACE_NOT_FOUND"
    gone = client.delete(f"/api/agent/containers/{mine['containerId']}", headers=alice)
    assert gone.status_code == 200 and gone.get_json() == {"ok": True, "containerId": mine["containerId"],
                                                           "destroyed": True}
    assert client.get("/api/agent/containers", headers=alice).get_json()["containers"] == []
    assert client.delete(f"/api/agent/containers/{mine['containerId']}", headers=alice).status_code == 404
    assert client.get("/api/agent/containers?limt=3", headers=alice).status_code == 400  # a typo: INVALID_QUERY


def test_a_workspaces_files_are_readable_by_its_owner_only(client: Any, sandbox: SandboxProcess) -> None:
    alice, bob = {"Authorization": "Bearer dev:alice"}, {"Authorization": "Bearer dev:bob"}
    (mine,) = client.get("/api/agent/containers", headers=alice).get_json()["containers"]
    wid = mine["containerId"]
    sandbox.client().exec(wid, "mkdir -p src && echo 'print(1)' > src/app.py && mkdir .git && echo x > .git/HEAD "
                          "&& ln -s /etc/passwd leak", timeout_s=20)
    listed = client.get(f"/api/agent/containers/{wid}/files", headers=alice)
    assert listed.status_code == 200, listed.get_json()
    assert listed.get_json() == {"ok": True, "containerId": wid, "truncated": False,
                                 "files": [{"path": "leak", "size": len("/etc/passwd")},
                                           {"path": "src/app.py", "size": 9}]}
    one = client.get(f"/api/agent/containers/{wid}/files?path=src/app.py", headers=alice).get_json()
    assert one["file"] == {"path": "src/app.py", "content": "print(1)\n", "size": 9, "truncated": False,
                           "binary": False}
    for bad in ("leak", "../x", "/etc/passwd"):
        refused = client.get(f"/api/agent/containers/{wid}/files?path={bad}", headers=alice)
        assert refused.status_code == 400 and refused.get_json()["error"]["code"] == "PATH_REFUSED", bad
    missing = client.get(f"/api/agent/containers/{wid}/files?path=nope.txt", headers=alice)
    assert missing.status_code == 404 and missing.get_json()["error"]["code"] == "FILE_NOT_FOUND"
    other = client.get(f"/api/agent/containers/{wid}/files", headers=bob)
    assert other.status_code == 404 and other.get_json()["error"]["code"] == "WORKSPACE_NOT_FOUND"


def test_erasing_the_users_data_destroys_their_workspaces(client: Any, sandbox: SandboxProcess) -> None:
    from shared.connectors.sandbox import SandboxError

    alice = {"Authorization": "Bearer dev:alice"}
    (mine,) = client.get("/api/agent/containers", headers=alice).get_json()["containers"]
    box = sandbox.client()
    box.exec(mine["containerId"], "echo private > notes.txt", timeout_s=20)
    erased = client.delete("/api/agent/me", headers=alice)
    assert erased.status_code == 200, erased.get_json()
    assert erased.get_json()["deleted"].get("workspaces") == 1
    with pytest.raises(SandboxError) as gone:
        box.info(mine["containerId"])
    assert gone.value.code == "WORKSPACE_NOT_FOUND"  # files and snapshot, not only the record


def test_the_tools_exist_only_with_a_sandbox(store: DocStore, tmp_path: Path) -> None:
    rt = Runtime(make_settings(), store=store, model=ScriptedModel([]), dispatcher=RecordingDispatcher())
    assert not {t.name for t in rt.registry} & {"container_exec", "run_shell_command"}


def test_a_script_never_runs_past_the_callers_time_left(store: DocStore, sandbox: SandboxProcess) -> None:
    from shared.tools.context import ToolContext
    from shared.tools.registry import ToolRegistry
    from shared.tools.sandbox_tools import register
    from shared.workspaces import Workspaces

    settings = make_settings(sandbox_url=sandbox.url, sandbox_key=sandbox.key)
    rt = runtime(store, sandbox, ScriptedModel([]))
    Workspaces(store, settings).create(UID, "ws_timeleft0001", run_id="run_x")
    registry = ToolRegistry()
    register(registry)
    tool = registry.get("container_exec")
    assert tool is not None
    ctx = ToolContext(uid=UID, run_id="run_x", action_id="act_1", users=rt.users, settings=settings,
                      deadline=time.monotonic() + 2.0)
    out = tool.run(ctx, tool.validate({"containerId": "ws_timeleft0001", "script": "sleep 30", "timeoutS": 600}))
    assert out["timedOut"] is True and out["exitCode"] == 137
    stopped_after = float(out["stderr"].rsplit("stopped after ", 1)[1].split(" s", 1)[0])
    assert stopped_after <= 2.0  # the sandbox was given the time left, not the 600 s asked for
    spent = ToolContext(uid=UID, run_id="run_x", action_id="act_2", users=rt.users, settings=settings,
                        deadline=time.monotonic() - 1)
    from shared.errors import ToolError

    with pytest.raises(ToolError, match="no time is left"):
        tool.run(spent, tool.validate({"containerId": "ws_timeleft0001", "script": "true"}))
