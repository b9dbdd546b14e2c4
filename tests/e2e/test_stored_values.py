"""One bad stored value never poisons an account (issue 35), through make dev's app on SQLite and
the Firestore emulator.

Alice gets one of everything through the API (runs paused and completed with their turns, actions,
events and approvals, threads and messages, memories, the usage ledger, integrations with and
without an expiry, MCP servers, remote A2A agents, webhooks, schedules, a plan session, a workspace
record, her profile). Then every one of her documents (the export's list) is overwritten directly in
the store, one collection at a time, with hostile variants of itself: wrong types, out-of-range
numbers (1.6e308, -1e18; NaN and infinities where the store can hold them: Firestore, where the
other variants are fewer: the reads are the same code), every field missing, half of them missing,
extra fields, garbage strings, out-of-range numbers nested deep. After each, every GET route of
the table (lists and single objects) and the export are called: none answers a 500,
every body is strict JSON (no ``NaN`` token), every list answers 200 (what cannot be read is left out
and logged), and a single object that cannot be read answers 409 ``STORED_VALUE_INVALID`` naming it.
A second test adds an A2A task with a push notification configuration and probes, after each
overwrite, the A2A binding's task reads, push configurations, streams, a reply that resumes the
task's run (whose stop announces the push) and cancel (JSON-RPC and REST), the admin API's change
of the user, and the routes that read a stored object before changing it (approve,
cancels, a plan session's refine/confirm/cancel, updates, every DELETE, the erasure): no 500, no
JSON-RPC internal error, and the erasure still leaves nothing of the user.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from devserver import create_app
from shared.auth import LocalAuthenticator
from shared.durable.dispatcher import RecordingDispatcher
from shared.models.scripted import FunctionModel
from shared.routes import ROUTES
from shared.runtime import Runtime, set_runtime
from shared.state.docstore import DocStore, Write
from shared.state.firestore_docstore import FirestoreDocStore
from shared.state.workspaces_repo import WorkspaceRecord
from tests.agent.conftest import make_settings
from tests.e2e import test_authz_matrix as matrix
from tests.e2e.conftest import ALICE
from tests.e2e.test_authz_matrix import Api
from tests.e2e.test_openapi import KEY

ADMIN = {"Authorization": "Bearer dev-admin:ops"}
HUGE = 1.6e308

Variant = Callable[[dict[str, Any]], dict[str, Any]]


def _other_type(value: Any) -> Any:
    if isinstance(value, bool):
        return "yes"
    if isinstance(value, int | float):
        return "garbage"
    if isinstance(value, str):
        return 42
    if isinstance(value, list):
        return {"not": "a list"}
    if isinstance(value, dict):
        return [1, "two"]
    return "garbage"


def _numbers(value: Any, to: float, *, deep: bool) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return to
    if deep and isinstance(value, dict):
        return {k: _numbers(v, to, deep=True) for k, v in value.items()}
    if deep and isinstance(value, list):
        return [_numbers(v, to, deep=True) for v in value]
    return value


def _strings(value: Any) -> Any:
    return "\x00\u202e<script>garbage</script> \ufeff" * 300 if isinstance(value, str) else value


def _half(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for i, (k, v) in enumerate(sorted(data.items())) if i % 2}


VARIANTS: dict[str, Variant] = {
    "wrong-types": lambda d: {k: _other_type(v) for k, v in d.items()},
    "huge-numbers": lambda d: {k: _numbers(v, HUGE, deep=False) for k, v in d.items()},
    "negative-numbers": lambda d: {k: _numbers(v, -1e18, deep=False) for k, v in d.items()},
    "huge-nested": lambda d: {k: _numbers(v, HUGE, deep=True) for k, v in d.items()},
    "fractions": lambda d: {k: _numbers(v, 0.5, deep=True) for k, v in d.items()},
    "all-missing": lambda d: {},
    "half-missing": _half,
    "extra-fields": lambda d: {**d, "zzExtra": {"x": [1, None]}, "schemaVersionX": "?"},
    "garbage-strings": lambda d: {k: _strings(v) for k, v in d.items()},
}
NON_FINITE: dict[str, Variant] = {
    "nan": lambda d: {k: _numbers(v, math.nan, deep=True) for k, v in d.items()},
    "infinity": lambda d: {k: _numbers(v, math.inf, deep=False) for k, v in d.items()},
    "minus-infinity": lambda d: {k: _numbers(v, -math.inf, deep=True) for k, v in d.items()},
}
"""Values Firestore holds but SQLite refuses to store (its JSON functions cannot read them)."""


@pytest.fixture
def api(docstore: DocStore) -> Iterator[Api]:
    dispatcher = RecordingDispatcher()
    rt = Runtime(make_settings(credentials_encryption_key=KEY, mcp_allow_private_urls=True,
                               limit_requests_per_minute=10**9), store=docstore,
                 model=FunctionModel(matrix._model), authenticator=LocalAuthenticator(), dispatcher=dispatcher)
    set_runtime(rt)
    yield Api(create_app().test_client(), rt, dispatcher)
    set_runtime(None)


def _everything_of_alice(api: Api) -> dict[str, str]:
    """One of each of alice's objects; the path parameters that name them."""
    paused = matrix._paused_run(api)
    done = matrix._approve_until_done(api, matrix._paused_run(api))
    probe = api.client.post("/api/agent/run", json={"prompt": matrix.PROBE}, headers=ALICE)  # a read-only step:
    assert probe.get_json()["status"] == "completed", probe.get_json()  # its turns document holds events, audit
    matrix.create_integration(api)
    resp = api.client.post("/api/integrations/google", json={"accessToken": "ya29.x", "expiresAt": time.time() + 600},
                           headers=ALICE)
    assert resp.status_code == 200, resp.get_json()
    matrix.create_mcp_server(api)
    session = matrix.create_session(api).value
    at = time.time()
    api.rt.store.commit([
        Write("set", "workspaces/ws_0123abcd", WorkspaceRecord(workspace_id="ws_0123abcd", uid="alice", created_at=at,
                                                               last_used_at=at).to_doc()),
        Write("set", "users/alice", {"uid": "alice", "trustLevel": "supervised", "profile": {"about": "me"},
                                     "limits": {"activeRuns": 3}}),
    ])
    return {"runId": paused["runId"], "doneRunId": done["runId"], "threadId": paused["threadId"],
            "approvalId": paused["approval"]["approvalId"], "sessionId": session, "name": "private-notes",
            "provider": "google", "containerId": "ws_0123abcd", "uid": "alice"}


def get_urls(ids: dict[str, str]) -> list[tuple[str, bool]]:
    """Every GET route of the table with alice's objects in its path: ``(url, is a list)``."""
    out: list[tuple[str, bool]] = []
    for route in ROUTES:
        if route.method != "GET" or route.public or route.path.startswith("/a2a"):
            continue
        url = route.path
        for name in route.path_params:
            url = url.replace("{" + name + "}", ids[name])
        if "{runId}" in route.path:
            out.append((route.path.replace("{runId}", ids["doneRunId"]), not route.path_params))
        if route.path == "/api/integrations/{provider}":
            out.append(("/api/integrations/slack", False))
        out.append((url, not route.path_params))
    return out


def _keeping_expiry(variant: Variant, data: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in variant(data).items() if k != "expireAt"}
    return out | ({"expireAt": data["expireAt"]} if "expireAt" in data else {})


def _strict(text: str) -> Any:
    def refuse(token: str) -> Any:
        raise ValueError(f"not JSON: {token}")
    return json.loads(text, parse_constant=refuse)


def check(api: Api, urls: list[tuple[str, bool]], what: str) -> list[str]:
    """What went wrong answering ``urls``: 500s, bodies that are not strict JSON, lists not 200."""
    problems: list[str] = []
    for url, is_list in urls:
        try:
            resp = api.client.get(url, headers=ADMIN if url.startswith("/api/admin/") else ALICE)
            text = resp.get_data(as_text=True)
        except Exception as exc:  # a stream that broke after its first line (the status was sent)
            problems.append(f"{what}: GET {url} raised {type(exc).__name__}: {exc}")
            continue
        try:
            bodies = [_strict(line) for line in text.splitlines() if line.strip()] if "ndjson" in (
                resp.mimetype or "") else [_strict(text)]
        except ValueError as exc:
            problems.append(f"{what}: GET {url} {resp.status_code} answered no strict JSON ({exc})")
            continue
        if resp.status_code == 503 and bodies[0]["error"]["code"] == "SANDBOX_NOT_CONFIGURED":
            continue  # a workspace's files: its record was read (the sandbox service is not set up here)
        if resp.status_code >= 500 or (is_list and resp.status_code != 200):
            problems.append(f"{what}: GET {url} {resp.status_code} {text[:200]}")
        elif resp.status_code == 409 and bodies[0]["error"]["code"] == "STORED_VALUE_INVALID":
            assert bodies[0]["error"]["details"]["object"], bodies[0]
    return problems


def test_no_stored_value_makes_a_read_fail(api: Api, docstore: DocStore) -> None:
    ids = _everything_of_alice(api)
    urls = get_urls(ids)
    assert check(api, urls, "as created") == []
    exported = api.client.post("/api/agent/me/export", headers=ALICE).get_json()["documents"]
    by_collection: dict[str, list[str]] = {}
    for path in exported:
        by_collection.setdefault(path.rsplit("/", 2)[-2] if "/" in path else path, []).append(path)
    assert {"runs", "turns", "actions", "events", "agentApprovals", "threads", "messages", "memories", "usage",
            "integrations", "mcpServers", "a2aAgents", "webhooks", "schedules", "sessions", "workspaces",
            "users"} <= set(by_collection), sorted(by_collection)
    originals = {p: d for p in exported if (d := docstore.get(p)) is not None}
    variants = dict(VARIANTS)
    if isinstance(docstore, FirestoreDocStore):  # the reads are the same code: what only Firestore can hold,
        variants = {k: VARIANTS[k] for k in ("wrong-types", "huge-nested", "all-missing")} | NON_FINITE  # and a few
    else:
        with pytest.raises(ValueError):
            docstore.commit([Write("set", "users/alice/memories/nan", {"createdAt": math.nan})])
    problems: list[str] = []
    for collection, paths in sorted(by_collection.items()):
        for name, variant in variants.items():
            try:
                docstore.commit([Write("set", p, variant(originals[p].data)) for p in paths])
            except ValueError:  # Firestore keeps expireAt as a Timestamp: years 1..9999
                docstore.commit([Write("set", p, _keeping_expiry(variant, originals[p].data)) for p in paths])
            problems += check(api, urls, f"{collection} {name}")
            if collection in ("limits", "usageDays", "usageMonths", "budgets", "users"):  # read by a start too
                start = api.client.post("/api/agent/run", json={"prompt": "probe"}, headers=ALICE)
                if start.status_code >= 500:
                    problems.append(f"{collection} {name}: POST /api/agent/run {start.status_code} {start.get_json()}")
            export = api.client.post("/api/agent/me/export", headers=ALICE)
            if export.status_code != 200:
                problems.append(f"{collection} {name}: POST /api/agent/me/export {export.status_code}")
            else:
                _strict(export.get_data(as_text=True))
        docstore.commit([Write("set", p, originals[p].data) for p in paths])
    assert problems == [], "\n".join(problems[:60]) + f"\n({len(problems)} problems)"


@pytest.mark.parametrize("body", ['{"prompt": "hi", "budgetUsd": NaN}', '{"prompt": "hi", "budgetUsd": -Infinity}',
                                  '{"prompt": "hi", "attachedContext": [{"n": Infinity}]}'])
def test_a_body_with_a_number_json_has_not_is_a_400(api: Api, body: str) -> None:
    """Python's parser reads NaN and Infinity; JSON has no such numbers, and none may be stored."""
    resp = api.client.post("/api/agent/run", data=body, headers={**ALICE, "Content-Type": "application/json"})
    assert resp.status_code == 400 and resp.get_json()["error"]["code"] == "INVALID_JSON", resp.get_json()
    assert "not a JSON number" in resp.get_json()["error"]["message"]


@pytest.mark.parametrize("value", [HUGE, -1.0, math.nan, math.inf])
def test_a_record_never_holds_a_time_or_number_it_could_not_answer(value: float) -> None:
    """Writes: a record is validated when it is built, before any write (``expiresAt: 1.6e308`` was
    once stored and made every later read a 500). Reads: the same document read back is refused,
    naming it."""
    from pydantic import ValidationError

    from shared.errors import StoredValueInvalid
    from shared.state.records import MemoryRecord, RunRecord

    with pytest.raises(ValidationError):
        MemoryRecord(id="m1", text="x", created_at=value)
    with pytest.raises(ValidationError):
        RunRecord(run_id="r", uid="u", thread_id="t", status="planning", cost_usd=math.nan)
    with pytest.raises(StoredValueInvalid) as refused:
        MemoryRecord.from_doc({"id": "m1", "text": "x", "createdAt": value}, "users/alice/memories/m1")
    assert refused.value.details["object"] == "users/alice/memories/m1"
    assert refused.value.message.startswith("users/alice/memories/m1 cannot be read as a MemoryRecord (createdAt")


def test_the_sweeps_go_on_past_a_corrupt_document(docstore: DocStore) -> None:
    """The recovery sweep (expired leases) and the delivery retries (due attempts) read one field of
    each candidate: a corrupt one is no candidate, the others are still found."""
    from shared.state.deliveries_repo import DeliveriesRepo
    from shared.state.runs_repo import RunsRepo

    runs = {"run_ok": 5.0, "run_zero": 0, "run_text": "garbage", "run_list": [1], "run_none": None}
    docstore.commit([Write("set", f"runs/{rid}", {"runId": rid, "uid": "alice", "threadId": "t", "status": "planning",
                                                  "leaseExpiresAt": at}) for rid, at in runs.items()]
                    + [Write("set", f"deliveries/{did}", {"status": "retrying", "nextAttemptAt": at})
                       for did, at in (("dlv_ok", 5.0), ("dlv_text", "soon"), ("dlv_map", {"a": 1}))])
    assert sorted(RunsRepo(docstore).expired_leases("planning", time.time())) == ["run_ok", "run_zero"]
    assert DeliveriesRepo(docstore).due("retrying", time.time(), 10) == ["dlv_ok"]


A2A = {**ALICE, "A2A-Version": "1.0"}
WRITE_VARIANTS = ("wrong-types", "huge-nested", "all-missing")
"""The hostile variants a write is probed with (the reads above take all of them)."""


def _a2a_task(api: Api) -> str:
    resp = api.client.post("/a2a/message:send", headers=A2A, json={"message": {
        "role": "ROLE_USER", "messageId": "m-hostile", "parts": [{"text": "remember the A2A way"}]}})
    assert resp.status_code == 200, resp.get_data()[:300]
    body = resp.get_json()
    return str(body["task"]["id"])


PUSH_CONFIG = "cfg-hostile"
DELIVER = "deliver"
"""Not a request: the work messages queued so far are handled (the A2A task's resume, its stop
announcing the push notification to its configuration)."""


def _push_config(api: Api, task: str) -> None:
    """A push notification configuration of the task (its token sealed at rest)."""
    resp = api.client.post(f"/a2a/tasks/{task}/pushNotificationConfigs", headers=A2A, json={
        "id": PUSH_CONFIG, "url": "http://127.0.0.1:9/push", "token": "tok-hostile"})
    assert resp.status_code == 200, resp.get_data()[:300]


def _rpc(method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": method, "method": method, "params": params}


def writes(ids: dict[str, str]) -> list[tuple[str, str, dict[str, Any] | None]]:
    """The requests that read a stored object before they change it: the A2A binding's task reads,
    push notification configurations, streams, a reply and cancel, approve, cancels, a plan
    session's refine/confirm/cancel, updates of schedules, webhooks, integrations and (the admin
    API) the user, every DELETE of an object, and last the erasure."""
    task, name = ids["taskId"], ids["name"]
    rpc = "/a2a"
    context = {"taskId": task, "id": PUSH_CONFIG}
    streamed = {"role": "ROLE_USER", "parts": [{"text": "remember the stream"}], "contextId": ids["contextId"]}
    return [
        ("POST", rpc, _rpc("GetTask", {"id": task})),
        ("POST", rpc, _rpc("ListTasks", {})),
        ("GET", f"/a2a/tasks/{task}", None),
        ("GET", "/a2a/tasks", None),
        ("GET", f"/a2a/tasks/{task}/pushNotificationConfigs", None),
        ("GET", f"/a2a/tasks/{task}/pushNotificationConfigs/{PUSH_CONFIG}", None),
        ("POST", rpc, _rpc("GetTaskPushNotificationConfig", context)),
        ("POST", rpc, _rpc("ListTaskPushNotificationConfigs", {"taskId": task})),
        ("POST", f"/a2a/tasks/{task}/pushNotificationConfigs", {"id": "cfg-more", "url": "http://127.0.0.1:9/more"}),
        ("POST", "/a2a/message:send", {"message": {"role": "ROLE_USER", "messageId": "m-reject", "taskId": task,
                                                   "parts": [{"text": "reject"}]},
                                       "configuration": {"returnImmediately": True}}),
        ("POST", DELIVER, None),  # the task's run resumes and stops: its push is announced
        ("POST", rpc, _rpc("SendStreamingMessage", {"message": {**streamed, "messageId": "m-rpc-stream"}})),
        ("POST", "/a2a/message:stream", {"message": {**streamed, "messageId": "m-rest-stream", "contextId": "c-new"}}),
        ("POST", rpc, _rpc("SubscribeToTask", {"id": task})),
        ("POST", f"/a2a/tasks/{task}:subscribe", None),
        ("DELETE", f"/a2a/tasks/{task}/pushNotificationConfigs/cfg-more", None),
        ("POST", rpc, _rpc("DeleteTaskPushNotificationConfig", context)),
        ("POST", f"/a2a/tasks/{task}:cancel", None),
        ("POST", rpc, _rpc("CancelTask", {"id": task})),
        ("PATCH", f"/api/admin/users/{ids['uid']}", {"trustLevel": "delegated", "limits": {"activeRuns": 4}}),
        ("POST", "/api/agent/approve", {"approvalId": ids["approvalId"], "decision": "approve"}),
        ("POST", f"/api/agent/runs/{ids['runId']}/cancel", {"reason": "probe"}),
        ("POST", f"/api/agent/sessions/{ids['sessionId']}/refine", {"message": "also pack"}),
        ("POST", f"/api/agent/sessions/{ids['sessionId']}/confirm", {"planVersion": 1}),
        ("POST", f"/api/agent/sessions/{ids['sessionId']}/cancel", {"reason": "probe"}),
        ("PUT", f"/api/agent/schedules/{name}", {"cron": "0 9 * * *", "prompt": "brief"}),
        ("PUT", f"/api/agent/webhooks/{name}", {"url": "http://127.0.0.1:9/x", "events": ["run.*"]}),
        ("POST", f"/api/integrations/mcp/{name}", {"url": "http://127.0.0.1:9/m", "accessToken": "t"}),
        ("POST", f"/api/integrations/a2a/{name}", {"url": "http://127.0.0.1:9/a", "accessToken": "t"}),
        ("POST", "/api/integrations/google", {"accessToken": "ya29.y", "expiresAt": time.time() + 900}),
        ("POST", "/api/integrations/slack", {"accessToken": "xoxp-y"}),
        ("DELETE", f"/api/agent/runs/{ids['doneRunId']}", None),
        ("DELETE", f"/api/agent/threads/{ids['threadId']}", None),
        ("DELETE", f"/api/agent/memories/{ids['memoryId']}", None),
        ("DELETE", f"/api/agent/containers/{ids['containerId']}", None),
        ("DELETE", f"/api/agent/schedules/{name}", None),
        ("DELETE", f"/api/agent/webhooks/{name}", None),
        ("DELETE", f"/api/integrations/mcp/{name}", None),
        ("DELETE", f"/api/integrations/a2a/{name}", None),
        ("DELETE", "/api/integrations/google", None),
        ("POST", "/api/agent/me/export", None),
        ("DELETE", "/api/agent/me", None),
    ]


def _answers(resp: Any) -> list[Any]:
    """The JSON answers of a response: its body, or each ``data`` of a Server-Sent Events stream."""
    text = resp.get_data(as_text=True)
    if resp.mimetype == "text/event-stream":
        return [_strict(line[len("data:"):]) for line in text.splitlines() if line.startswith("data:")]
    return [_strict(text)] if text.strip() else []


def _failure(method: str, url: str, resp: Any, answers: list[Any]) -> str | None:
    """What is wrong with one answer: a 500, a JSON-RPC internal error, an A2A stream's internal
    error event, a 409 naming no object."""
    if resp.status_code >= 500:
        return f"{method} {url} {resp.status_code} {resp.get_data(as_text=True)[:200]}"
    for answer in answers:
        error = answer.get("error") if isinstance(answer, dict) else None
        if not isinstance(error, dict):
            continue
        if error.get("code") == -32603 or error.get("status") == "INTERNAL":
            return f"{method} {url} internal error {json.dumps(answer)[:200]}"
        if (resp.status_code == 409 and error.get("code") == "STORED_VALUE_INVALID"
                and not error["details"]["object"]):
            return f"{method} {url} 409 naming nothing"
    return None


def _streamed_to(answers: list[Any]) -> str | None:
    """The state an A2A stream (JSON-RPC or REST) ended in."""
    states = [event.get("statusUpdate", {}).get("status", {}).get("state")
              for answer in answers if isinstance(answer, dict)
              for event in [answer.get("result", answer)] if isinstance(event, dict)]
    return next((s for s in reversed(states) if s), None)


def probe_writes(api: Api, ids: dict[str, str], what: str) -> list[str]:
    """What went wrong answering :func:`writes`: a 500, no strict JSON, a JSON-RPC internal error,
    a 409 naming no object; and the erasure must erase (nothing of alice's is left to export). As
    created, each stream must end where the new message's run waits for its approval."""
    problems: list[str] = []
    api.dispatcher.take()  # what an earlier probe queued is not this one's
    for method, url, body in writes(ids):
        headers = A2A if url.startswith("/a2a") else ADMIN if url.startswith("/api/admin/") else ALICE
        try:
            if url == DELIVER:
                api.deliver()
                continue
            resp = api.client.open(url, method=method, json=body, headers=headers)
            answers = _answers(resp)
        except Exception as exc:
            problems.append(f"{what}: {method} {url} raised {type(exc).__name__}: {exc}")
            continue
        if (what == "as created" and resp.mimetype == "text/event-stream"
                and (state := _streamed_to(answers)) != "TASK_STATE_INPUT_REQUIRED"):
            problems.append(f"{what}: {method} {url} streamed to {state}")
        if resp.status_code == 503 and answers and answers[0]["error"]["code"] == "SANDBOX_NOT_CONFIGURED":
            continue  # a workspace's delete: its record was read (no sandbox service here)
        if (failure := _failure(method, url, resp, answers)) is not None:
            problems.append(f"{what}: {failure}")
    exported = api.client.post("/api/agent/me/export", headers=ALICE).get_json()
    left = [p for p in exported.get("documents", {}) if p != "users/alice/limits/requests"]  # the export's own count
    if left:
        problems.append(f"{what}: DELETE /api/agent/me left {sorted(left)[:5]}")
    return problems


def test_no_stored_value_makes_a_write_or_an_a2a_read_fail(api: Api, docstore: DocStore,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The same hostile documents (the A2A tasks and their push notification configurations too),
    probed with the requests that read a stored object and then change it, the A2A streams and the
    admin API's change of the user: none answers a 500 (or a JSON-RPC internal error, or an
    internal error event in a stream); each answers a clear 4xx or does its work, and the erasure
    still erases everything of the user."""
    from shared.a2a import handler

    for wait in ("STREAM_S", "FOLLOW_S", "CANCEL_WAIT_S"):  # a task whose run cannot go on (its actions or turns
        monkeypatch.setattr(handler, wait, 1.0)            # unreadable) is followed for 1 s, not minutes
    ids = _everything_of_alice(api)
    ids["taskId"] = _a2a_task(api)
    ids["contextId"] = str(api.client.get(f"/a2a/tasks/{ids['taskId']}", headers=A2A).get_json()["contextId"])
    _push_config(api, ids["taskId"])
    matrix.create_memory(api)
    ids["memoryId"] = api.client.get("/api/agent/memories", headers=ALICE).get_json()["memories"][0]["memoryId"]
    exported = api.client.post("/api/agent/me/export", headers=ALICE).get_json()["documents"]
    originals = {p: d.data for p in exported if (d := docstore.get(p)) is not None}
    by_collection: dict[str, list[str]] = {}
    for path in originals:
        by_collection.setdefault(path.rsplit("/", 2)[-2] if "/" in path else path, []).append(path)
    assert {"a2aTasks", "pushConfigs"} <= set(by_collection), sorted(by_collection)
    variants = {k: VARIANTS[k] for k in WRITE_VARIANTS}
    if isinstance(docstore, FirestoreDocStore):
        variants = {"wrong-types": VARIANTS["wrong-types"], "nan": NON_FINITE["nan"]}

    def restore() -> None:
        items = sorted(originals.items())
        for i in range(0, len(items), 400):
            docstore.commit([Write("set", p, d) for p, d in items[i:i + 400]])

    assert probe_writes(api, ids, "as created") == []
    problems: list[str] = []
    for collection, paths in sorted(by_collection.items()):
        for name, variant in variants.items():
            restore()
            try:
                docstore.commit([Write("set", p, variant(originals[p])) for p in paths])
            except ValueError:
                docstore.commit([Write("set", p, _keeping_expiry(variant, originals[p])) for p in paths])
            problems += probe_writes(api, ids, f"{collection} {name}")
    assert problems == [], "\n".join(problems[:60]) + f"\n({len(problems)} problems)"


def test_an_unreadable_a2a_task_is_named_and_left_out_of_the_list(api: Api, docstore: DocStore) -> None:
    """A corrupt task document through both A2A bindings: reading it is a clear refusal naming it
    (JSON-RPC -32600 / HTTP 400, ``STORED_VALUE_INVALID: <path>``), never an internal error; the
    list leaves it out and still answers the others."""
    corrupt, fine = _a2a_task(api), _a2a_task(api)
    path = f"users/alice/a2aTasks/{corrupt}"
    docstore.commit([Write("set", path, {"taskId": 42, "history": {"not": "a list"}})])
    rest = api.client.get(f"/a2a/tasks/{corrupt}", headers=A2A)
    assert rest.status_code == 400 and f"STORED_VALUE_INVALID: {path}" in rest.get_data(as_text=True), rest.get_data()
    got = api.client.post("/a2a", headers=A2A, json={"jsonrpc": "2.0", "id": 1, "method": "GetTask",
                                                     "params": {"id": corrupt}}).get_json()
    assert got["error"]["code"] == -32600 and got["error"]["message"].startswith(f"STORED_VALUE_INVALID: {path}"), got
    listed = api.client.post("/a2a", headers=A2A, json={"jsonrpc": "2.0", "id": 2, "method": "ListTasks",
                                                        "params": {}}).get_json()
    assert [t["id"] for t in listed["result"]["tasks"]] == [fine], listed
    # the run itself still ends (its push notifications read the task: an unreadable one has none)
    run = api.client.get(f"/api/agent/runs/{corrupt}", headers=ALICE).get_json()
    assert run["status"] == "awaiting_confirmation", run
    assert matrix._approve_until_done(api, {**run, **run["result"]})["status"] == "completed"


def test_an_unreadable_push_config_is_named_left_out_and_never_pushed_to(api: Api, docstore: DocStore) -> None:
    """A corrupt push notification configuration: asking for it is a refusal naming it (JSON-RPC
    -32600 / HTTP 400, ``STORED_VALUE_INVALID: <path>``), the task's list answers the others, and the
    run's stop announces its push to the readable configuration only (before: every read was an
    internal error and the stop itself raised)."""
    from shared.state.a2a_tasks_repo import config_doc_id
    from shared.state.docstore import Query

    task = _a2a_task(api)
    _push_config(api, task)
    fine = api.client.post(f"/a2a/tasks/{task}/pushNotificationConfigs", headers=A2A,
                           json={"id": "cfg-fine", "url": "http://127.0.0.1:9/fine"})
    assert fine.status_code == 200, fine.get_data()[:300]
    path = f"users/alice/a2aTasks/{task}/pushConfigs/{config_doc_id(PUSH_CONFIG)}"
    docstore.commit([Write("set", path, {"id": PUSH_CONFIG, "config": ["not", "a", "config"], "createdAt": 1.0})])
    got = api.client.post("/a2a", headers=A2A, json=_rpc("GetTaskPushNotificationConfig",
                                                         {"taskId": task, "id": PUSH_CONFIG})).get_json()
    assert got["error"]["code"] == -32600 and got["error"]["message"].startswith(f"STORED_VALUE_INVALID: {path}"), got
    rest = api.client.get(f"/a2a/tasks/{task}/pushNotificationConfigs/{PUSH_CONFIG}", headers=A2A)
    assert rest.status_code == 400 and f"STORED_VALUE_INVALID: {path}" in rest.get_data(as_text=True), rest.get_data()
    listed = api.client.get(f"/a2a/tasks/{task}/pushNotificationConfigs", headers=A2A).get_json()
    assert [c["id"] for c in listed["configs"]] == ["cfg-fine"], listed
    reply = api.client.post("/a2a/message:send", headers=A2A, json={
        "message": {"role": "ROLE_USER", "messageId": "m-no", "taskId": task, "parts": [{"text": "reject"}]},
        "configuration": {"returnImmediately": True}})
    assert reply.status_code == 200, reply.get_data()[:300]
    api.deliver()
    assert api.client.get(f"/a2a/tasks/{task}", headers=A2A).get_json()["status"]["state"] == "TASK_STATE_COMPLETED"
    pushed = [d.data for d in docstore.query(Query("deliveries")) if d.data.get("target") == f"a2a:{task}"]
    assert [d["url"] for d in pushed] == ["http://127.0.0.1:9/fine"], pushed


def test_the_admin_api_names_a_corrupt_user_and_changes_nothing(api: Api, docstore: DocStore) -> None:
    """``PATCH /api/admin/users/{uid}`` of a user whose document cannot be read: 409
    ``STORED_VALUE_INVALID`` naming it, the document left as it was, nothing audited."""
    from shared.state.docstore import Query

    docstore.commit([Write("set", "users/alice", {"uid": 42, "trustLevel": ["root"], "limits": "none"})])
    audits = len(docstore.query(Query("audit")))
    resp = api.client.patch("/api/admin/users/alice", headers=ADMIN, json={"trustLevel": "delegated"})
    assert resp.status_code == 409, resp.get_json()
    error = resp.get_json()["error"]
    assert error["code"] == "STORED_VALUE_INVALID" and error["details"]["object"] == "users/alice", error
    user = docstore.get("users/alice")
    assert user is not None and user.data == {"uid": 42, "trustLevel": ["root"], "limits": "none"}
    assert len(docstore.query(Query("audit"))) == audits


@pytest.mark.parametrize("binding", ["jsonrpc", "rest"])
def test_a_run_unreadable_while_its_task_is_streamed_ends_the_stream_with_a_refusal(
        api: Api, docstore: DocStore, binding: str) -> None:
    """A subscriber follows a task waiting for input; its run document is then overwritten with one
    that cannot be read: the stream's next read refuses it, and the stream ends with that refusal
    naming the document (JSON-RPC -32600, REST an error event of status 400), not an internal error."""
    task = _a2a_task(api)
    path = f"runs/{task}"
    if binding == "jsonrpc":
        resp = api.client.post("/a2a", headers=A2A, json=_rpc("SubscribeToTask", {"id": task}), buffered=False)
    else:
        resp = api.client.post(f"/a2a/tasks/{task}:subscribe", headers=A2A, buffered=False)
    chunks = iter(resp.response)
    first = b""
    while b"data:" not in first:
        first += next(chunks)
    assert b"TASK_STATE_INPUT_REQUIRED" in first, first  # the task as it is: the stream now follows its run
    docstore.commit([Write("set", path, {"runId": 42, "status": ["not", "a", "status"]})])
    text = (first + b"".join(chunks)).decode()
    answers = [_strict(line[len("data:"):]) for line in text.splitlines() if line.startswith("data:")]
    error = answers[-1]["error"]
    assert f"STORED_VALUE_INVALID: {path}" in error["message"], answers[-1]
    assert error["code"] == (-32600 if binding == "jsonrpc" else 400), answers[-1]


@pytest.mark.parametrize("corrupt", ["first", "all"])
def test_a_run_whose_turns_cannot_be_read_fails_its_resume_naming_the_document(
        api: Api, docstore: DocStore, caplog: pytest.LogCaptureFixture, corrupt: str) -> None:
    """A run paused for an approval whose stored turn documents are then corrupted: the approval is
    recorded (202), and its resume refuses the unreadable document by name instead of raising (a
    message redelivered forever, the run ``executing``): the run ends ``failed``
    (``INCONSISTENT_STATE``, its error naming the document), logged at ERROR with the run and the
    path, the message acknowledged; the decision is kept, and the approved side effect never runs."""
    import logging

    from shared.state.docstore import Query

    run = matrix._paused_run(api)
    run_id, approval = run["runId"], run["approval"]
    turn_docs = docstore.query(Query(f"runs/{run_id}/turns"))
    assert turn_docs, run
    broken = turn_docs if corrupt == "all" else turn_docs[:1]
    docstore.commit([Write("set", d.path, {"turns": [{"role": "robot", "parts": "none"}]}) for d in broken])
    resp = api.client.post("/api/agent/approve", json={"approvalId": approval["id"], "decision": "approve"},
                           headers=ALICE)
    assert resp.status_code == 202, resp.get_json()
    with caplog.at_level(logging.WARNING):
        api.deliver()  # raised pydantic's ValidationError before (the message went back to be redelivered)
    got = api.client.get(f"/api/agent/runs/{run_id}", headers=ALICE).get_json()
    assert got["status"] == "failed", got
    path = broken[0].path
    error = got["error"]
    assert error["code"] == "INCONSISTENT_STATE" and path in error["message"], error
    logged = [r for r in caplog.records if r.levelno >= logging.WARNING and path in r.getMessage() + str(
        getattr(r, "fields", ""))]
    assert logged and run_id in str(getattr(logged[0], "fields", "")) + str(getattr(logged[0], "runId", "")), [
        (r.getMessage(), getattr(r, "fields", None)) for r in caplog.records]
    assert api.dispatcher.take() == []  # acknowledged: nothing re-queued
    decided = api.client.get(f"/api/agent/approvals/{approval['id']}", headers=ALICE).get_json()
    assert decided["approval"]["status"] == "approved", decided
    assert api.client.get("/api/agent/memories", headers=ALICE).get_json()["memories"] == []  # save_memory never ran
    assert [d.data["status"] for d in docstore.query(Query(f"runs/{run_id}/actions"))] == ["approved"]


def test_a_corrupt_action_inside_a_turns_document_is_named_and_no_read_of_the_run_fails(
        api: Api, docstore: DocStore) -> None:
    """A turns document may hold the actions its step answered (``actions``, issue 33): an entry that
    is no valid action is refused naming the document (the run's trace: 409 ``STORED_VALUE_INVALID``),
    while the run, its events and the export still answer."""
    from shared.state.docstore import Query

    run_id = matrix._approve_until_done(api, matrix._paused_run(api))["runId"]
    docs = docstore.query(Query(f"runs/{run_id}/turns"))
    shared = [d for d in docs if d.data.get("actions")]
    if not shared:  # the step answered its calls after a decision: give one document a step's actions
        shared = [docs[-1]]
    doc = shared[0]
    docstore.commit([Write("set", doc.path, {**doc.data, "actions": [{"actionId": 42, "status": ["bad"]}]})])
    trace = api.client.get(f"/api/agent/runs/{run_id}/trace", headers=ALICE)
    assert trace.status_code == 409, trace.get_json()
    assert trace.get_json()["error"]["details"]["object"] == doc.path, trace.get_json()
    for url in (f"/api/agent/runs/{run_id}", f"/api/agent/runs/{run_id}/events", "/api/agent/runs"):
        resp = api.client.get(url, headers=ALICE)
        assert resp.status_code == 200, (url, resp.get_data()[:300])
    export = api.client.post("/api/agent/me/export", headers=ALICE)
    assert export.status_code == 200 and doc.path in export.get_json()["documents"]


def test_corrupt_step_parts_of_a_turns_document_leave_the_replay_and_the_export_answering(
        api: Api, docstore: DocStore) -> None:
    """A step's turns document holds its events (``events``, ``lastSeq``, ``eventsExpireAt``) and
    audit entries (``audit``, issue 33's session 4): hostile values there leave out what cannot be
    read (logged); the run's other events still replay, and its view, trace and the export answer."""
    from shared.state.docstore import Query

    run = api.client.post("/api/agent/run", json={"prompt": matrix.PROBE}, headers=ALICE).get_json()
    run_id = run["runId"]
    events = api.client.get(f"/api/agent/runs/{run_id}/events", headers=ALICE)
    every = [json.loads(line) for line in events.get_data(as_text=True).splitlines() if line.strip()]
    (step,) = [d for d in docstore.query(Query(f"runs/{run_id}/turns")) if "events" in d.data]
    held = {e["seq"] for e in step.data["events"]}
    others = [e for e in every if e["seq"] not in held]
    hostile: list[dict[str, Any]] = [
        {"events": "not a list", "lastSeq": "garbage", "audit": 42, "eventsExpireAt": "soon"},
        {"events": [1, None, {"seq": "x"}, {"type": "delta"}], "lastSeq": HUGE, "audit": ["x", None]},
        {"events": {"seq": 1}, "lastSeq": -5, "audit": {"kind": 1}, "eventsExpireAt": None},
    ]
    for parts in hostile:
        docstore.commit([Write("set", step.path, {**step.data, **parts})])
        for after in ("", "?after=1", f"?after={max(held)}"):
            resp = api.client.get(f"/api/agent/runs/{run_id}/events{after}", headers=ALICE)
            assert resp.status_code == 200, (parts, resp.get_data()[:300])
            got = [_strict(line) for line in resp.get_data(as_text=True).splitlines() if line.strip()]
            start = int(after.split("=")[1]) if after else 0
            assert got == [e for e in others if e["seq"] > start], (parts, after, got)
        for url in (f"/api/agent/runs/{run_id}", f"/api/agent/runs/{run_id}/trace"):
            resp = api.client.get(url, headers=ALICE)
            assert resp.status_code == 200, (parts, url, resp.get_data()[:300])
        export = api.client.post("/api/agent/me/export", headers=ALICE)
        assert export.status_code == 200 and step.path in export.get_json()["documents"], parts
        # the run's audit read leaves out what is no entry (none of the step's is one here)
        assert not [e for e in api.rt.runs.audit_of(run_id) if e.get("kind") == "policy_decision"], parts
