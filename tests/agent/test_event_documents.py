"""A commit's events share one document named by the last one's seq (issue 20: fewer documents per
step), and ``list_events(after=N)`` still returns exactly the events after N, in order, from every
layout: shared documents, single-event documents (deltas, runs written before), both."""

from __future__ import annotations

import time
from typing import Any

import pytest

from shared.api import RunRequest
from shared.durable.dispatcher import RecordingDispatcher
from shared.models.base import ModelRequest, Turn
from shared.models.scripted import FunctionModel, call, calls_turn, text_turn
from shared.runtime import Runtime
from shared.state import paths
from shared.state.docstore import DocStore, Query
from shared.state.runs_repo import SHARED_EVENTS_MAX, SHARED_EVENTS_MAX_CHARS, RunsRepo
from tests.agent.conftest import make_settings


def _ev(seq: int, text: str = "") -> dict[str, Any]:
    return {"type": "delta", "seq": seq, "delta": text or f"d{seq}"}


def _layout(store: DocStore) -> RunsRepo:
    """Events 1..9 as runs write them: 1-2 single (a run written before), 3-6 one commit's, 7
    single (a delta), 8-9 one commit's."""
    repo = RunsRepo(store)
    store.commit([repo.event_write("run_x", _ev(1)), repo.event_write("run_x", _ev(2)),
                  *repo.event_writes("run_x", [_ev(3), _ev(4), _ev(5), _ev(6)])])
    store.commit(repo.event_writes("run_x", [_ev(7)]))
    store.commit(repo.event_writes("run_x", [_ev(8), _ev(9)]))
    return repo


def test_a_commits_events_share_one_document_named_by_the_last_seq(docstore: DocStore) -> None:
    _layout(docstore)
    docs = docstore.query(Query(paths.events("run_x")))
    assert [d.id for d in docs] == ["00000001", "00000002", "00000006", "00000007", "00000009"]
    assert all("expireAt" in d.data for d in docs)


@pytest.mark.parametrize("after", range(0, 10))
def test_list_events_after_any_seq_is_exact_on_every_layout(docstore: DocStore, after: int) -> None:
    repo = _layout(docstore)
    assert repo.list_events("run_x", after=after) == [_ev(s) for s in range(after + 1, 10)]
    for limit in (1, 2, 3):
        assert repo.list_events("run_x", after=after, limit=limit) == [
            _ev(s) for s in range(after + 1, min(after + 1 + limit, 10))]


def test_shared_event_documents_are_bounded() -> None:
    repo = RunsRepo.__new__(RunsRepo)
    repo.event_retention_s = 60.0
    many = [_ev(s) for s in range(1, 2 * SHARED_EVENTS_MAX + 2)]
    sizes = [len(w.data["events"]) if "events" in w.data else 1 for w in repo.event_writes("run_x", many)]
    assert sizes == [SHARED_EVENTS_MAX, SHARED_EVENTS_MAX, 1]
    half = SHARED_EVENTS_MAX_CHARS // 2
    big = [_ev(1, "x" * half), _ev(2, "y" * half)]
    assert [w.path for w in repo.event_writes("run_x", big)] == [paths.event("run_x", 1), paths.event("run_x", 2)]


def lookup_then_answer(request: ModelRequest) -> Turn:
    done = any(t.role == "model" for t in request.turns)
    return text_turn("Done.") if done else calls_turn(call("search_memory", {"query": "q"}))


def test_a_tool_steps_events_are_one_document_and_replay_equals_the_live_stream(docstore: DocStore) -> None:
    rt = Runtime(make_settings(), store=docstore, model=FunctionModel(lookup_then_answer),
                 dispatcher=RecordingDispatcher())
    started = rt.agent.start("alice", RunRequest(prompt="look it up"))
    live: list[dict[str, Any]] = []
    result = rt.agent.run(rt.agent.context(started, listener=live.append))
    assert result.status == "completed"
    replay = rt.runs.list_events(result.run_id)
    assert replay[1:] == live and [e["seq"] for e in replay] == list(range(1, len(replay) + 1))
    step = [e["type"] for e in replay if e["type"] in ("agent_state", "tool_call", "tool_result")]
    assert step.count("tool_call") == 1 and step.count("tool_result") == 1
    # The tool step's events ride in its turns document (issue 33, session 4), found by their last seq.
    (held,) = [d for d in docstore.query(Query(paths.turns(result.run_id))) if "events" in d.data]
    assert {e["type"] for e in held.data["events"]} >= {"tool_call", "tool_result"}
    assert held.data["lastSeq"] == held.data["events"][-1]["seq"] and held.data["eventsExpireAt"] > time.time()
    docs = docstore.query(Query(paths.events(result.run_id)))
    assert not any(e["type"] in ("tool_call", "tool_result") for d in docs for e in d.data.get("events", [d.data]))
    assert len(docs) + 1 < len(replay)
