"""A host's own step (``Host.after_step``, e.g. a plan's reflection) is a loop step: the loop takes
it after its own, handles what it returns like any outcome, and turns its error into a failure."""

from __future__ import annotations

from shared.failures import FailureCode
from shared.loop.context import RunContext
from shared.loop.outcomes import HostStep, NextStepFailed, NextStepRunAgain, Settled, StepOutcome
from shared.loop.resume import resume_run
from shared.runtime import Runtime
from shared.state.docstore import DocStore
from tests.agent.conftest import make_settings
from tests.kernel.task_host import TaskHost, start_task, task_record
from tests.kernel.test_continuation import Counter, model, registry


class ReflectingHost(TaskHost):
    """Takes a step of its own after every loop step; stops the unit after ``stop_after`` of them."""

    kind = "reflecting"

    def __init__(self, stop_after: int, *, broken: bool = False) -> None:
        super().__init__(steps_per_invocation=50)
        self.stop_after, self.broken = stop_after, broken
        self.seen: list[str] = []

    def after_step(self, ctx: RunContext, outcome: Settled) -> HostStep | None:
        def reflect() -> StepOutcome:
            self.seen.append(type(outcome).__name__)
            if self.broken:
                raise RuntimeError("the host's step broke")
            if len(self.seen) >= self.stop_after:
                return NextStepFailed(FailureCode.TASK_FAILED, "the host's step stopped the unit")
            return outcome

        return reflect


def run_with(store: DocStore, host: ReflectingHost) -> tuple[Runtime, Counter, str]:
    counter = Counter()
    rt = Runtime(make_settings(), store=store, model=model(counter), registry=registry(counter),
                 hosts=[host])
    run_id = start_task(rt, "alice", "count to six")
    snap = rt.runs.get_run(run_id)
    assert snap is not None
    run = snap.run.model_copy(update={"host": host.kind})
    rt.runs.commit(snap, run)
    assert resume_run(rt.services, run_id) == "resumed"
    return rt, counter, run_id


def test_the_host_step_follows_every_loop_step_and_may_stop_the_unit(sqlite_docstore: DocStore) -> None:
    host = ReflectingHost(stop_after=3)
    rt, counter, run_id = run_with(sqlite_docstore, host)
    assert host.seen == [NextStepRunAgain.__name__] * 3  # one host step per loop step, in the loop
    snap = rt.runs.get_run(run_id)
    assert snap is not None and snap.run.status == "failed" and snap.run.error is not None
    assert snap.run.error.code == FailureCode.TASK_FAILED
    assert counter.executions == [1, 2, 3] and task_record(rt, run_id) is None


def test_an_error_in_the_host_step_fails_the_unit_like_one_in_the_loop_step(sqlite_docstore: DocStore) -> None:
    host = ReflectingHost(stop_after=99, broken=True)
    rt, counter, run_id = run_with(sqlite_docstore, host)
    snap = rt.runs.get_run(run_id)
    assert snap is not None and snap.run.status == "failed" and snap.run.error is not None
    assert snap.run.error.code == FailureCode.INTERNAL
    assert host.seen == ["NextStepRunAgain"] and counter.executions == [1]
    assert rt.runs.list_events(run_id)[-1]["type"] == "error"
