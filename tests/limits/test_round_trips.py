"""Sequential store round trips on the paths a user waits on (issue 33), counted, never timed.

The figures are ``bench.round_trips``' (the ``round_trips`` section of ``make bench``): the real
HTTP edge and runtime on a real store (SQLite, the Firestore emulator) behind the counting wrapper
of ``bench.instrument``, a scripted model noting the count at each of its calls.

The issue's targets are <= 2 before the first model call, 1 per tool step, <= 2 to resume: all three
are met (one ``get_many`` and one commit; the step's commit; one ``get_many`` and the claim before
the approved side effect starts, and its result's commit before the next model call). The values
asserted here are today's, so that any change shows up (a regression fails; an improvement must
lower the figure here and in docs/benchmarks.md).
"""

from __future__ import annotations

from typing import Any

from bench.instrument import InstrumentedStore
from bench.round_trips import measure
from shared.state.docstore import DocStore, Transaction, Write

# Today's counts (both stores alike), and the targets beside them.
TO_FIRST_MODEL_CALL = 2  # target 2: met (one get_many, one commit; 11 before session 2, 17 before session 1)
ON_THREAD = 5  # the next run on that thread: its messages query, one thread read in the transaction, the run read back
# (15 before session 2, 18 before that)
PER_TOOL_STEP = 1.0  # target 1: met (the step's commit; 2 before: the thread read of the stop check)
TO_RESUME = 2  # target 2: met. From the resume message to the approved side effect's start: one get_many (the
# run, user, stamps, the paused turn's actions and turn documents, named by the message) and the claim, one commit
# with the side effect's own (10 before session 2; 5 to the next model call before session 3)
RESUME_TO_NEXT_MODEL_CALL = 3  # the floor with exactly-once: + the tool's result, durable before the model hears it
APPROVE_REQUEST = 4  # report only: the decision transaction (its commit; the approval with the request counter, then
# the run and action: two reads) and the outbox entry marked published (8 before session 3: the request count's own
# read and commit, the run and action read one by one, the entry read back before its publication)
PLAN_SESSION_START = 2  # 6 before the batched start read, 3 before the request counter joined it (33g)
# 56 before issue 33's stamps and batched resume read (each invocation); 47 before 33g: no read of
# the session before each act (a cancel asks the run to stop), the session's end lists no webhooks, a
# yield publishes its continue message without reading its outbox entry back, and the router does not read
# back the entry of a continue message its claim removed (one per invocation). 29 before 33o: each of the 3
# invocations reads its turns by the name its continue message gives (no query of its actions and turns) and
# its status event rides on its claim (no commit of its own). Per invocation now: one get_many, the claim,
# one commit per act, the yield's commit and its outbox entry marked published (the last one ends instead).
PLAN_ACT_ROUND_TRIPS, PLAN_ACTS = 20, 12
PLAN_INVOCATION_CLAIM = "commit events outbox runs"  # the run, its consumed continue entry, its status event


def test_round_trips_on_the_paths_a_user_waits_on(store: DocStore) -> None:
    got = measure(store)
    start = got["run_start"]
    assert start["same_thread"], "the model was called on another thread: the count would not be the run's"
    assert start["round_trips_to_first_model_call"] == TO_FIRST_MODEL_CALL, start["trips"]
    assert len(start["trips"]) == TO_FIRST_MODEL_CALL
    on_thread = got["run_start_on_thread"]
    assert on_thread["round_trips_to_first_model_call"] == ON_THREAD, on_thread["trips"]
    step = got["tool_step"]
    assert step["between_model_calls"] == [PER_TOOL_STEP] * 9, step
    assert step["round_trips_per_tool_step"] == PER_TOOL_STEP
    # The step's one commit is there (the rest is what a faster step would remove).
    assert any(t.startswith("commit ") for t in step["trips_of_one_step"]), step
    resume = got["resume"]
    assert resume["hinted"], "the approve's resume message names the paused turn's documents"
    assert resume["round_trips_to_resume"] == TO_RESUME, resume["trips"]
    assert resume["round_trips_to_next_model_call"] == RESUME_TO_NEXT_MODEL_CALL, resume["trips"]
    # One read (no query: the paused turn is read by name with the run), then the claim of the
    # resumed run and that of its approved side effect as one commit, the tool, its result's commit.
    first, claim, result = resume["trips"]
    assert first.startswith("get_many runs/") and "/actions/" in first and "/turns/" in first, first
    assert [claim, result] == ["commit actions audit events outbox runs",
                               "commit actions audit events runs turns"], resume["trips"]
    assert resume["round_trips_of_the_approve_request"] == APPROVE_REQUEST, resume
    plan_start = got["plan_session_start"]
    assert plan_start["round_trips_to_first_model_call"] == PLAN_SESSION_START, plan_start["trips"]
    act = got["plan_act"]
    assert act["acts"] == PLAN_ACTS
    assert act["round_trips_per_act"] == round(PLAN_ACT_ROUND_TRIPS / PLAN_ACTS, 3), act
    # Each invocation: one get_many naming its turn documents (its message's hint), then its claim.
    plan_trips = act["trips"]
    reads = [i for i, t in enumerate(plan_trips) if t.startswith("get_many runs/")]
    assert len(reads) == 3 and all("/turns/" in plan_trips[i] for i in reads), plan_trips
    assert [plan_trips[i + 1] for i in reads] == [PLAN_INVOCATION_CLAIM] * 3, plan_trips
    assert not [t for t in plan_trips if t.startswith("query runs/")], plan_trips


def _count(store: InstrumentedStore, fn: Any) -> tuple[int, list[str]]:
    trips = store.record_trips()
    before = store.snapshot()["round_trips"]
    fn()
    return store.snapshot()["round_trips"] - before, list(trips)


def test_the_wrapper_counts_each_call_and_each_read_of_a_transaction(store: DocStore) -> None:
    counted = InstrumentedStore(store)
    assert _count(counted, lambda: counted.commit([Write("set", "rtcount/a", {"n": 1})])) == (1, ["commit rtcount"])
    assert _count(counted, lambda: counted.get("rtcount/a"))[0] == 1
    assert _count(counted, lambda: counted.get_many(["rtcount/a", "rtcount/b", "rtcount/c"]))[0] == 1

    def txn(t: Transaction) -> None:
        t.get("rtcount/a")
        t.get("rtcount/b")
        t.write(Write("set", "rtcount/b", {"n": 2}))

    n, trips = _count(counted, lambda: counted.run_transaction(txn))
    assert n == 3 and trips == ["run_transaction ", "txn_get rtcount/a", "txn_get rtcount/b"]
