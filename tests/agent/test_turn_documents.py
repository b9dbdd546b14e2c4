"""A step's turns share one document (issue 20: fewer documents per step), and every layout reads back
verbatim: shared documents, single-turn documents (a run's first turns, runs written before), both."""

from __future__ import annotations

from shared.api import RunRequest
from shared.durable.dispatcher import RecordingDispatcher
from shared.models.base import ModelRequest, Part, Turn
from shared.models.scripted import FunctionModel, call, calls_turn, text_turn
from shared.runtime import Runtime
from shared.state import paths
from shared.state.docstore import Query, Write
from shared.state.runs_repo import SHARED_TURNS_MAX_CHARS, RunsRepo, turn_doc, turn_writes
from shared.state.sqlite_docstore import SqliteDocStore
from tests.agent.conftest import make_settings

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
