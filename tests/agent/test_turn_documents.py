"""A step's turns share one document (issue 20: fewer documents per step), and every layout reads back
verbatim: shared documents, single-turn documents (a run's first turns, runs written before), both.
The actions of a step's answered calls ride in its turns document (issue 33, session 3), and the
actions stored by earlier versions (documents of their own) are read with them."""

from __future__ import annotations

import pytest

from shared.api import ApproveRequest, RunRequest
from shared.durable.dispatcher import RecordingDispatcher
from shared.errors import StoredValueInvalid
from shared.models.base import ModelRequest, Part, Turn
from shared.models.scripted import FunctionModel, ScriptedModel, call, calls_turn, text_turn
from shared.runtime import Runtime
from shared.state import paths
from shared.state.docstore import DocStore, Query, Write
from shared.state.records import ActionRecord
from shared.state.runs_repo import ACTIONS_KEY, SHARED_TURNS_MAX_CHARS, RunsRepo, step_writes, turn_doc, turn_writes
from shared.state.sqlite_docstore import SqliteDocStore
from tests.agent.conftest import make_settings
from tests.messages import deliver_published

SEEN: list[ModelRequest] = []


def three_lookups(request: ModelRequest) -> Turn:
    SEEN.append(request)
    done = sum(1 for t in request.turns if t.role == "model")
    return calls_turn(call("search_memory", {"query": f"q{done}"})) if done < 3 else text_turn("Done.")


def test_each_tool_step_writes_one_turn_document_and_the_turns_read_back_verbatim(
        sqlite_docstore: SqliteDocStore) -> None:
    SEEN.clear()
    rt = Runtime(make_settings(), store=sqlite_docstore, model=FunctionModel(three_lookups),
                 dispatcher=RecordingDispatcher())
    started = rt.agent.start("alice", RunRequest(prompt="look three things up"))
    result = rt.agent.run(rt.agent.context(started))
    assert result.status == "completed"
    turns = rt.runs.load_turns(result.run_id)
    # prompt, then (model call, tool responses) x 3, then the answer
    assert [t.role for t in turns] == ["user", *["model", "user"] * 3, "model"]
    assert [t.function_calls[0].args for t in turns if t.function_calls] == [{"query": f"q{i}"} for i in range(3)]
    assert turns[-1].text == "Done."
    # What the model saw on its last call is exactly what was stored (verbatim, in order).
    assert [turn_doc(t) for t in SEEN[-1].turns] == [turn_doc(t) for t in turns[:-1]]
    docs = sqlite_docstore.query(Query(paths.turns(result.run_id)))
    assert [d.id for d in docs] == ["000000", "000001", "000003", "000005", "000007"]


def _turn(text: str) -> Turn:
    return Turn(role="model", parts=[Part(text=text)])


def test_single_and_shared_turn_documents_read_back_in_order(sqlite_docstore: SqliteDocStore) -> None:
    legacy = [Write("create", paths.turn("run_x", i), turn_doc(_turn(f"t{i}"))) for i in range(2)]
    sqlite_docstore.commit([*legacy, *turn_writes("run_x", {2: _turn("t2"), 3: _turn("t3")}),
                            *turn_writes("run_x", {4: _turn("t4")})])
    texts = [t.text for t in RunsRepo(sqlite_docstore).load_turns("run_x")]
    assert texts == ["t0", "t1", "t2", "t3", "t4"]


def test_turns_too_large_together_get_a_document_each() -> None:
    half = SHARED_TURNS_MAX_CHARS // 2
    big: dict[int, Turn] = {5: _turn("x" * half), 6: _turn("y" * half)}
    writes = turn_writes("run_x", big)
    assert [w.path for w in writes] == [paths.turn("run_x", 5), paths.turn("run_x", 6)]
    small: dict[int, Turn] = {5: _turn("a"), 6: _turn("b")}
    assert [w.path for w in turn_writes("run_x", small)] == [paths.turn("run_x", 5)]


# ---- the actions of a step's answered calls (issue 33, session 3: one document per step less) ----------
def _runtime(store: DocStore, model: FunctionModel | ScriptedModel) -> Runtime:
    return Runtime(make_settings(), store=store, model=model, dispatcher=RecordingDispatcher())


def test_the_actions_of_a_steps_answered_calls_ride_in_its_turns_document(store: DocStore) -> None:
    SEEN.clear()
    rt = _runtime(store, FunctionModel(three_lookups))
    started = rt.agent.start("alice", RunRequest(prompt="look three things up"))
    result = rt.agent.run(rt.agent.context(started))
    assert result.status == "completed"
    assert store.query(Query(paths.actions(result.run_id))) == []  # no document of their own
    docs = {d.id: d.data for d in store.query(Query(paths.turns(result.run_id)))}
    assert [len(docs[i].get(ACTIONS_KEY, [])) for i in ("000001", "000003", "000005")] == [1, 1, 1]
    actions = rt.runs.list_actions(result.run_id)
    assert [(a.tool, a.args, a.turn_index, a.status) for a in actions] == [
        ("search_memory", {"query": f"q{i}"}, 1 + 2 * i, "completed") for i in range(3)]
    assert all(a.result is not None and a.outcome == "success" for a in actions)
    assert rt.runs.open_actions(result.run_id) == []
    # The turns read back as before: the actions are not turns.
    assert [t.role for t in rt.runs.load_turns(result.run_id)] == ["user", *["model", "user"] * 3, "model"]


def test_a_paused_turns_actions_stay_documents_of_their_own(store: DocStore) -> None:
    """A turn with a read-only call answered and a side effect waiting for its decision: both actions
    are documents a resume reads (and reads by id); after the decision, each is listed once."""
    from shared.agent.approvals import decide

    model = ScriptedModel([calls_turn(call("search_memory", {"query": "bob"}),
                                      call("save_memory", {"text": "bob likes tea"})), text_turn("Saved.")])
    rt = _runtime(store, model)
    started = rt.agent.start("alice", RunRequest(prompt="remember bob likes tea"))
    result = rt.agent.run(rt.agent.context(started))
    assert result.status == "awaiting_confirmation" and result.approval is not None
    own = rt.runs.open_actions(result.run_id)
    assert [(a.tool, a.status) for a in own] == [("search_memory", "completed"),
                                                 ("save_memory", "awaiting_confirmation")]
    assert all(store.get(paths.action(result.run_id, a.action_id)) is not None for a in own)
    decide(rt.services, rt.dispatcher, "alice", ApproveRequest(approvalId=result.approval.id, decision="approve"))
    deliver_published(rt)
    snap = rt.runs.get_run(result.run_id)
    assert snap is not None and snap.run.status == "completed"
    assert [(a.tool, a.status) for a in rt.runs.list_actions(result.run_id)] == [
        ("search_memory", "completed"), ("save_memory", "completed")]


def _action(action_id: str, turn_index: int, call_index: int = 0) -> ActionRecord:
    return ActionRecord(action_id=action_id, run_id="run_x", uid="alice", tool="search_memory", args={"query": "q"},
                        args_hash="h", turn_index=turn_index, call_index=call_index, status="completed",
                        result={"memories": []}, outcome="success")


def test_actions_stored_by_earlier_versions_read_with_the_new_ones(store: DocStore) -> None:
    """Written raw as earlier versions stored them: a shared turns document without actions and an
    action document for each call; then a step of this version (its action inside its turns
    document); an action in both places (none is written so) is listed once, as its own document."""
    old = _action("act_old", 1)
    both = _action("act_both", 3)
    store.commit([
        Write("create", paths.turn("run_x", 0), turn_doc(Turn(role="user", parts=[Part(text="hi")]))),
        Write("create", paths.turn("run_x", 1), {"turns": [turn_doc(_turn("t1")), turn_doc(_turn("r1"))]}),
        Write("set", paths.action("run_x", "act_old"), old.to_doc()),
        Write("set", paths.action("run_x", "act_both"), both.model_copy(update={"attempts": 2}).to_doc()),
        *step_writes("run_x", {3: _turn("t3"), 4: _turn("r3")}, [both, _action("act_new", 3, 1)])[0],
    ])
    repo = RunsRepo(store)
    listed = repo.list_actions("run_x")
    assert [(a.action_id, a.attempts) for a in listed] == [("act_old", 0), ("act_both", 2), ("act_new", 0)]
    assert [t.text for t in repo.load_turns("run_x")] == ["hi", "t1", "r1", "t3", "r3"]


def test_only_ended_actions_without_an_approval_of_an_answered_turn_ride_along() -> None:
    turns = {3: _turn("t3"), 4: _turn("r3")}
    waiting = _action("act_wait", 3).model_copy(update={"status": "awaiting_confirmation"})
    approved = _action("act_apr", 3, 1).model_copy(update={"approval_id": "apr_1"})
    earlier = _action("act_earlier", 1)
    done = _action("act_done", 3, 2)
    writes, own = step_writes("run_x", turns, [waiting, approved, earlier, done])
    assert [w.data.get(ACTIONS_KEY) for w in writes] == [[done.to_doc()]]
    assert own == [waiting, approved, earlier]
    # A commit adding the model turn alone (a pause) keeps every action a document of its own.
    writes, own = step_writes("run_x", {3: _turn("t3")}, [done])
    assert ACTIONS_KEY not in writes[0].data and own == [done]
    # Too large to ride along: the turns still share their document, the actions get their own.
    big = done.model_copy(update={"result": {"text": "x" * SHARED_TURNS_MAX_CHARS}})
    writes, own = step_writes("run_x", turns, [big])
    assert [w.path for w in writes] == [paths.turn("run_x", 3)] and ACTIONS_KEY not in writes[0].data
    assert own == [big]


def test_a_turns_document_whose_actions_are_not_actions_is_refused_naming_it(store: DocStore) -> None:
    store.commit([Write("create", paths.turn("run_x", 1), {"turns": [turn_doc(_turn("t1"))], ACTIONS_KEY: "x"})])
    with pytest.raises(StoredValueInvalid) as err:
        RunsRepo(store).list_actions("run_x")
    assert err.value.details["object"] == paths.turn("run_x", 1)
    store.commit([Write("set", paths.turn("run_x", 1), {"turns": [], ACTIONS_KEY: [{"tool": 3}]})])
    with pytest.raises(StoredValueInvalid) as err:
        RunsRepo(store).list_actions("run_x")
    assert str(err.value.details["object"]).startswith(paths.turn("run_x", 1))
