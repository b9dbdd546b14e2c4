"""The stamps of a user's memories, MCP servers, A2A agents and webhooks (shared/state/users_repo.py,
issue 33): a run's start reads them in its batch and it queries only what may have changed (at its
start; the webhooks at its stop), and what it builds from them (the system instruction's memories,
the tool list, the stop's deliveries) is never stale: every write of the collection moves its stamp
in the same commit."""

from __future__ import annotations

from typing import Any

from flask.testing import FlaskClient

from bench.instrument import InstrumentedStore
from shared.auth import LocalAuthenticator
from shared.durable.dispatcher import RecordingDispatcher
from shared.models.base import ModelRequest, Turn
from shared.models.scripted import FunctionModel, text_turn
from shared.runtime import Runtime, set_runtime
from shared.state.docstore import DocStore, Write
from shared.state.mcp_servers_repo import A2aAgentsRepo, McpServersRepo
from shared.state.records import MemoryRecord
from shared.state.user_data_repo import UNDER_USER
from shared.state.users_repo import StampedCache, Stamps
from shared.state.webhooks_repo import WebhooksRepo
from tests.agent.conftest import make_settings
from tests.limits.conftest import ALICE, OFF

STAMPED = ("memories", "mcpServers", "a2aAgents", "webhooks")


class Instructions:
    def __init__(self) -> None:
        self.seen: list[str] = []

    def __call__(self, request: ModelRequest) -> Turn:
        self.seen.append(request.system_instruction or "")
        return text_turn("ok")


def _runtime(store: DocStore) -> tuple[Runtime, InstrumentedStore, Instructions]:
    counted = InstrumentedStore(store)
    model = Instructions()
    rt = Runtime(make_settings(**OFF), store=counted, model=FunctionModel(model), authenticator=LocalAuthenticator(),
                 dispatcher=RecordingDispatcher())
    set_runtime(rt)
    return rt, counted, model


def _run(client: FlaskClient, counted: InstrumentedStore) -> list[str]:
    trips = counted.record_trips()
    resp = client.post("/api/agent/run", json={"prompt": "hi"}, headers=ALICE)
    assert resp.status_code == 200 and resp.get_json()["status"] == "completed", resp.get_json()
    return [t for t in trips if t.startswith("query ")]


def _queried(trips: list[str]) -> set[str]:
    return {t.rsplit("/", 1)[-1] for t in trips if t.rsplit("/", 1)[-1] in STAMPED}


def test_a_user_with_none_costs_no_query_once_known(store: DocStore, client: FlaskClient) -> None:
    try:
        _, counted, _ = _runtime(store)
        assert _queried(_run(client, counted)) == set(STAMPED)  # no stamp yet: asked once
        stamp = store.get("users/alice/stamps/config")
        assert stamp is not None and {k: stamp.data.get(k) for k in STAMPED} == dict.fromkeys(STAMPED, 0)
        # Known empty: another process (nothing cached) asks nothing either.
        _, counted, _ = _runtime(store)
        assert _queried(_run(client, counted)) == set()
    finally:
        set_runtime(None)


def test_memories_saved_or_deleted_are_in_the_next_runs_instruction(store: DocStore, client: FlaskClient) -> None:
    try:
        rt, counted, model = _runtime(store)
        _run(client, counted)
        rt.users.save_memory("alice", MemoryRecord(id="m1", text="prefers green tea"))
        assert _queried(_run(client, counted)) == {"memories"}
        assert "prefers green tea" in model.seen[-1]
        assert _queried(_run(client, counted)) == set()  # read at this stamp already (this process)
        assert "prefers green tea" in model.seen[-1]
        rt.users.delete_memory("alice", "m1")
        _run(client, counted)
        assert "prefers green tea" not in model.seen[-1]
    finally:
        set_runtime(None)


def test_memories_stored_before_stamps_are_read_and_never_marked_empty(store: DocStore, client: FlaskClient) -> None:
    try:
        store.commit([Write("set", "users/alice/memories/old", MemoryRecord(id="old", text="likes jazz").to_doc())])
        _, counted, model = _runtime(store)
        for _ in range(2):
            assert "memories" in _queried(_run(client, counted))
            assert "likes jazz" in model.seen[-1]
        stamp = store.get("users/alice/stamps/config")
        assert stamp is not None and "memories" not in stamp.data and stamp.data.get("mcpServers") == 0
    finally:
        set_runtime(None)


def test_every_write_of_a_tool_source_moves_its_stamp(store: DocStore) -> None:
    repos: tuple[tuple[Any, str], ...] = ((McpServersRepo(store), "mcpServers"), (A2aAgentsRepo(store), "a2aAgents"),
                                          (WebhooksRepo(store), "webhooks"))
    for repo, kind in repos:
        repo.put("alice", "one", {"name": "one"})
        repo.put("alice", "one", {"name": "one", "url": "x"})
        assert repo.delete("alice", "one")
        stamp = store.get("users/alice/stamps/config")
        assert stamp is not None and stamp.data[kind] == 3


def test_the_cache_asks_again_when_the_stamp_moved() -> None:
    cache = StampedCache()
    asked: list[int] = []

    def query(found: list[Any]) -> Any:
        return lambda: asked.append(1) or found

    assert cache.read(Stamps("u", None), "memories", query([])) == [] and len(asked) == 1
    assert cache.read(Stamps("u", None), "memories", query([])) == [] and len(asked) == 2  # unknown: never cached
    assert cache.read(None, "memories", query(["a"])) == ["a"] and len(asked) == 3  # nothing known
    stamped = Stamps("u", _doc({"memories": 0}))
    assert cache.read(stamped, "memories", query(["stale"])) == [] and len(asked) == 3
    one = Stamps("u", _doc({"memories": 1}))
    assert cache.read(one, "memories", query(["a"])) == ["a"] and len(asked) == 4
    assert cache.read(one, "memories", query(["b"])) == ["a"] and len(asked) == 4
    assert cache.read(Stamps("u", _doc({"memories": 2})), "memories", query(["b"])) == ["b"] and len(asked) == 5
    assert cache.read(Stamps("v", _doc({"memories": 1})), "memories", query(["c"])) == ["c"]  # per user


def test_an_erasure_deletes_the_stamp_before_the_data_it_stands_for() -> None:
    assert UNDER_USER[0].name == "stamps"


def _doc(data: dict[str, Any]) -> Any:
    from shared.state.docstore import Doc

    return Doc("users/u/stamps/config", data, "t")
