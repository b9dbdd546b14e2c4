"""A tool step's events and the audit entries of its answered calls ride in its turns document
(issue 33, session 4: 4 documents per tool step), and every reader answers as before: the replay
after any ``seq`` (streams, follows, AG-UI, A2A and session follows all read ``list_events``), the
run's audit entries, the export and the deletion of a run; on the new layout, on the layout of runs
stored by earlier versions (events and audit entries as documents of their own) and on a run that
has both (begun by an earlier version, continued by this one). Retention: what ``EVENT_RETENTION_S``
and ``AUDIT_RETENTION_S`` ended is never answered, wherever it is stored."""

from __future__ import annotations

import time
from typing import Any

import pytest

from bench.instrument import InstrumentedStore
from shared.agent.streaming import replay_events
from shared.api import RunRequest
from shared.durable.dispatcher import RecordingDispatcher
from shared.models.base import ModelRequest, Turn
from shared.models.scripted import FunctionModel, call, calls_turn, text_turn
from shared.runtime import Runtime
from shared.state import paths
from shared.state.docstore import DocStore, Query, Write
from shared.state.runs_repo import AUDIT_KEY, EVENTS_EXPIRE_KEY, EVENTS_KEY, STEP_SEQ_KEY, RunsRepo
from shared.state.user_data_repo import UserDataRepo
from tests.agent.conftest import make_settings


def lookups(n: int) -> FunctionModel:
    def answer(request: ModelRequest) -> Turn:
        done = sum(1 for t in request.turns if t.role == "model")
        return calls_turn(call("search_memory", {"query": f"q{done}"})) if done < n else text_turn("Done.")
    return FunctionModel(answer)


def _run(store: DocStore, steps: int = 3) -> tuple[Runtime, str, list[dict[str, Any]]]:
    """A run of ``steps`` read-only tool steps and an answer: its id and its events as streamed live."""
    rt = Runtime(make_settings(max_loop_steps=16, max_tool_calls_per_turn=16), store=store, model=lookups(steps),
                 dispatcher=RecordingDispatcher())
    started = rt.agent.start("alice", RunRequest(prompt="look things up"))
    live = list(started.first_events)
    result = rt.agent.run(rt.agent.context(started, listener=live.append))
    assert result.status == "completed"
    return rt, result.run_id, live


def _to_old_layout(store: DocStore, repo: RunsRepo, run_id: str, which: slice = slice(None)) -> None:
    """Rewrite the run's turns documents (those ``which`` picks) as an earlier version stored the
    step: the events in ``runs/{id}/events`` (a commit's events in one document named by the last
    seq), the audit entries in ``audit/{auditId}``, the turns document without them."""
    held = [d for d in store.query(Query(paths.turns(run_id))) if EVENTS_KEY in d.data][which]
    for d in held:
        stripped = {k: v for k, v in d.data.items() if k not in (EVENTS_KEY, AUDIT_KEY, STEP_SEQ_KEY,
                                                                   EVENTS_EXPIRE_KEY)}
        store.commit([Write("set", d.path, stripped), *repo.event_writes(run_id, d.data[EVENTS_KEY]),
                      *(Write("create", paths.audit(e["auditId"]), e) for e in d.data.get(AUDIT_KEY, []))])


def _timeless(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Audit entries without ``expireAt``: Firestore keeps that of a document of its own as a
    Timestamp (microseconds), one inside a turns document as the number written."""
    assert all(e["expireAt"] == pytest.approx(e["at"] + 400 * 86400.0, abs=1e-3) for e in entries)
    return [{k: v for k, v in e.items() if k != "expireAt"} for e in entries]


def test_a_read_only_step_writes_its_events_and_audit_entries_in_its_turns_document(docstore: DocStore) -> None:
    rt, run_id, live = _run(docstore)
    docs = docstore.query(Query(paths.turns(run_id)))
    steps = [d for d in docs if EVENTS_KEY in d.data]
    assert len(steps) == 3
    for d in steps:
        kinds = [e["type"] for e in d.data[EVENTS_KEY]]
        assert {"tool_call", "tool_result"} <= set(kinds), kinds
        assert d.data[STEP_SEQ_KEY] == d.data[EVENTS_KEY][-1]["seq"] and d.data[EVENTS_EXPIRE_KEY] > time.time()
        (entry,) = d.data[AUDIT_KEY]
        assert entry["kind"] == "policy_decision" and entry["decision"] == "allow"
        assert entry["actionId"] == d.data["actions"][0]["actionId"] and entry["expireAt"] > time.time()
    # Nothing of the steps is a document of its own: the events collection holds the start's and the
    # answer's events only, the audit collection nothing of this run.
    own = [e for d in docstore.query(Query(paths.events(run_id))) for e in d.data.get(EVENTS_KEY, [d.data])]
    assert not {"tool_call", "tool_result"} & {e["type"] for e in own}
    assert docstore.query(Query("audit", where=(("runId", run_id),))) == []
    assert [e["kind"] for e in rt.runs.audit_of(run_id)] == ["policy_decision"] * 3
    assert rt.runs.list_events(run_id) == live


@pytest.mark.parametrize("layout", ["new", "old", "both"])
def test_the_replay_after_any_seq_and_the_audit_read_the_same_on_every_layout(docstore: DocStore, layout: str
                                                                            ) -> None:
    rt, run_id, live = _run(docstore)
    audit = rt.runs.audit_of(run_id)
    if layout != "new":  # "both": a run begun by an earlier version and continued by this one
        _to_old_layout(docstore, rt.runs, run_id, slice(None) if layout == "old" else slice(0, 2))
        held = [d for d in docstore.query(Query(paths.turns(run_id))) if EVENTS_KEY in d.data]
        assert len(held) == (0 if layout == "old" else 1)
    assert [e["seq"] for e in live] == list(range(1, len(live) + 1))
    for after in range(len(live) + 1):
        assert rt.runs.list_events(run_id, after=after) == live[after:], after
        for limit in (1, 2, 5):
            assert rt.runs.list_events(run_id, after=after, limit=limit) == live[after:after + limit], (after, limit)
    assert _timeless(rt.runs.audit_of(run_id)) == _timeless(audit)
    # A follow (SSE, Last-Event-ID, AG-UI, A2A and session follows read the same way) from any point.
    for after in (0, 4, len(live) - 2):
        assert list(replay_events(rt.runs, run_id, after=after, follow=True)) == live[after:]


def test_what_the_retention_ended_is_never_answered_wherever_it_is_stored(docstore: DocStore) -> None:
    """A step's events and audit entries live as long as its turns document (the run), yet a replay,
    the run's audit read and the export leave out those past ``eventsExpireAt`` / their ``expireAt``,
    as they leave out a document of its own past its ``expireAt`` that Firestore's TTL has not
    deleted yet: the same answer on every layout, before and after the TTL's deletion."""
    rt, run_id, live = _run(docstore)
    _to_old_layout(docstore, rt.runs, run_id, slice(1, 2))  # the second step as an earlier version stored it
    first, _, third = [d for d in docstore.query(Query(paths.turns(run_id))) if "actions" in d.data]
    past = time.time() - 1.0
    gone = {e["seq"] for e in first.data[EVENTS_KEY]}
    (old_events,) = [d for d in docstore.query(Query(paths.events(run_id))) if EVENTS_KEY in d.data
                     and any(e["type"] == "tool_call" for e in d.data[EVENTS_KEY])]
    gone |= {e["seq"] for e in old_events.data[EVENTS_KEY]}
    (old_audit,) = docstore.query(Query("audit", where=(("runId", run_id),)))
    expired_entry = {**third.data[AUDIT_KEY][0], "expireAt": past}
    docstore.commit([Write("set", first.path, {**first.data, EVENTS_EXPIRE_KEY: past}),
                     Write("set", old_events.path, {**old_events.data, "expireAt": past}),
                     Write("set", old_audit.path, {**old_audit.data, "expireAt": past}),
                     Write("set", third.path, {**third.data, AUDIT_KEY: [expired_entry]})])
    assert rt.runs.list_events(run_id) == [e for e in live if e["seq"] not in gone]
    assert rt.runs.audit_of(run_id) == [first.data[AUDIT_KEY][0]]
    exported = UserDataRepo(docstore).export("alice")
    assert EVENTS_KEY not in exported[first.path] and AUDIT_KEY in exported[first.path]
    assert AUDIT_KEY not in exported[third.path] and EVENTS_KEY in exported[third.path]
    assert exported[first.path]["turns"] == first.data["turns"]


def test_deleting_a_run_keeps_its_audit_entries(docstore: DocStore) -> None:
    """The audit log outlives a deleted run, as it did when every entry was a document of its own:
    the entries riding in its turns documents are written to ``audit/{auditId}`` first."""
    rt, run_id, _ = _run(docstore)
    audit = rt.runs.audit_of(run_id)
    assert len(audit) == 3
    UserDataRepo(docstore).delete_run("alice", run_id)
    assert docstore.query(Query(paths.turns(run_id))) == [] and docstore.get(paths.run(run_id)) is None
    kept = sorted((d.data for d in docstore.query(Query("audit", where=(("runId", run_id),)))),
                  key=lambda e: e["at"])
    assert _timeless(kept) == _timeless(audit)


@pytest.mark.parametrize("steps", [2, 12])
def test_a_followers_poll_reads_the_same_whatever_the_runs_history(docstore: DocStore, steps: int) -> None:
    """A follow's poll reads the run; only when its ``lastSeq`` is past the follow's last seq does
    it read the events after it: the events collection and the turns documents by ``lastSeq`` (one
    query more than when every event was a document of its own; a poll finding nothing new reads
    one document, two before issue 33's session 4). What it reads does not grow with the run's
    history."""
    store = InstrumentedStore(docstore)
    rt = Runtime(make_settings(max_loop_steps=16, max_tool_calls_per_turn=16), store=store, model=lookups(steps),
                 dispatcher=RecordingDispatcher())
    started = rt.agent.start("alice", RunRequest(prompt="look things up"))
    result = rt.agent.run(rt.agent.context(started))
    assert result.status == "completed"
    run_id = result.run_id
    last = RunsRepo(docstore).get_run(run_id).run.last_seq  # type: ignore[union-attr]
    read_events = ["query " + paths.events(run_id), "query " + paths.turns(run_id)]
    for after, events in ((last, 0), (last - 5, 5)):
        trips = store.record_trips()
        before = store.snapshot()
        got = list(replay_events(rt.runs, run_id, after=after, follow=True))
        spent = store.delta(store.snapshot(), before)
        assert len([e for e in got if e["type"] != "stream_end"]) == events, got
        assert trips == ["get " + paths.run(run_id), *(read_events if events else [])], trips
        # documents read: the run, and one of each query at most (the last step's turns document,
        # the answer's events), however many steps came before
        assert sum(spent["docs_read"].values()) == (3 if events else 1), spent
