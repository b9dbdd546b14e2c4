"""A step's commit that the store refuses for contention is tried again (``COMMIT_RETRIES`` in
shared/loop/context.py): nothing was written (the commit is atomic and conditioned on the run's
token), so the invocation waits and commits the same step. On the Firestore emulator this is what a
run meets while runs queueing behind it hold its documents in their transactions
(tests/integration/test_queue_two_processes.py: before, its POST answered 503 ``CONTENTION``)."""

from __future__ import annotations

from typing import Any

from shared.api import RunRequest
from shared.durable.dispatcher import RecordingDispatcher
from shared.errors import TransactionContention
from shared.loop.context import COMMIT_RETRIES
from shared.models.base import ModelRequest, Turn
from shared.models.scripted import FunctionModel, text_turn
from shared.runtime import Runtime
from shared.state.docstore import DocStore, Write
from tests.agent.conftest import make_settings


class ContendedCommits:
    """The real store, except that its next ``times`` commits give up the way a contended one does."""

    def __init__(self, inner: DocStore) -> None:
        self._inner = inner
        self.times = 0
        self.refused = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def commit(self, writes: list[Write]) -> Any:
        if self.times > 0:
            self.times -= 1
            self.refused += 1
            raise TransactionContention("write aborted by contention (test)")
        return self._inner.commit(writes)


def test_a_step_commit_refused_for_contention_is_tried_again(store: DocStore) -> None:
    contended = ContendedCommits(store)
    calls: list[int] = []

    def model(request: ModelRequest) -> Turn:
        calls.append(len(request.turns))
        contended.times = COMMIT_RETRIES  # every retry but the last is refused too
        return text_turn("done")

    rt = Runtime(make_settings(), store=contended, model=FunctionModel(model),  # type: ignore[arg-type]
                 dispatcher=RecordingDispatcher())
    started = rt.agent.start("alice", RunRequest(prompt="hello", threadId="contended"))
    result = rt.agent.run(rt.agent.context(started))
    assert result.status == "completed"
    assert contended.refused == COMMIT_RETRIES and len(calls) == 1  # the model was not asked again
    snap = rt.runs.get_run(started.outcome.snapshot.run.run_id)
    assert snap is not None and snap.run.status == "completed"
    assert [(m.role, m.text) for m in rt.runs.list_messages("alice", "contended", 10)] == [
        ("user", "hello"), ("assistant", "done")]
