"""``make reliability``'s queue scenario (issue 28): runs queued on busy threads
(``multitaskStrategy: enqueue``) started through the ``dequeue`` → ``continue`` path while
deliveries crash between dequeue and start.

Each of ``--threads`` threads gets ``--runs`` runs: the first starts at once, the others are queued
in order. Messages are delivered as Pub/Sub would: in random order, some twice (some concurrently),
and a crash (``bench/chaos.py``: a ``Crash`` at a commit, as if the process died) is armed in a
share of the ``dequeue`` and ``continue`` deliveries: before the start transaction (the message was
taken, nothing written), right after it (the run started, its ``continue`` never published), or
around the claim that continues it. A crashed delivery is redelivered (unacknowledged) or lost
(dead-lettered: only the sweep's re-publication of its outbox entry brings it back).

Checked at the end: no run lost (every one ``completed``), none started twice (each answered by
exactly one model call: a second start would call the model again), order kept (on every thread
the runs started in arrival order, one after the other, and the thread's messages are in that
order), no outbox entry left. JSON summary; exit 1 on a violation.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import random
import sys
import threading
from collections import Counter
from typing import Any

from bench.chaos import Chaos, Crash, CrashPlan
from bench.emulator import reliability_parser, run_on_store
from shared.api import RunRequest
from shared.config import Settings
from shared.durable.dispatcher import RecordingDispatcher
from shared.durable.messages import WorkMessage
from shared.models.base import ModelRequest, Turn
from shared.models.scripted import FunctionModel, text_turn
from shared.runtime import Runtime
from shared.state.docstore import DocStore

CRASHES = [CrashPlan("commit", "before", 1), CrashPlan("commit", "after", 1), CrashPlan("commit", "after", 2)]
"""In a ``dequeue`` delivery commit 1 is the start transaction, 2 the ``continue`` entry's
publication mark; in a ``continue`` delivery 1 is the claim."""


def run(opts: argparse.Namespace, store: DocStore) -> dict[str, Any]:
    rng = random.Random(opts.seed)
    chaos = Chaos(store)
    calls: Counter[str] = Counter()
    lock = threading.Lock()

    def answer(request: ModelRequest) -> Turn:
        prompt = "".join(p.text or "" for p in request.turns[-1].parts)
        with lock:
            calls[prompt] += 1
        return text_turn(f"done: {prompt}")

    settings = dataclasses.replace(Settings(state_backend="sqlite", auth_mode="local", dispatcher="none"),
                                   lease_ttl_s=opts.lease, limit_active_runs=0, limit_requests_per_minute=0)
    dispatcher = RecordingDispatcher()
    rt = Runtime(settings, store=chaos.store, model=FunctionModel(answer), dispatcher=dispatcher)
    tally: Counter[str] = Counter()
    firsts = []
    order: dict[str, list[str]] = {}
    for t in range(opts.threads):
        thread = f"qt{t}"
        started = [rt.agent.start("alice", RunRequest(prompt=f"{thread}-r{r}", threadId=thread,
                                                      multitaskStrategy="enqueue")) for r in range(opts.runs)]
        firsts.append(started[0])
        order[thread] = [s.outcome.snapshot.run.run_id for s in started]
    rng.shuffle(firsts)
    for s in firsts:
        rt.agent.run(rt.agent.context(s))

    def deliver(message: WorkMessage) -> None:
        plan = rng.choice(CRASHES) if message.kind in ("dequeue", "continue") and rng.random() < opts.crash_p \
            else None
        chaos.arm(plan)
        try:
            rt.router.handle(message)
        except Crash as exc:
            tally[f"crash_{message.kind}_{exc}"] += 1
            if rng.random() < 0.7:
                pending.append(message)  # unacknowledged: Pub/Sub redelivers it
            else:
                tally["messages_lost"] += 1  # dead-lettered: the sweep must bring it back
        finally:
            chaos.disarm()

    pending: list[WorkMessage] = []
    rounds = 0
    while rounds < opts.max_rounds:
        rounds += 1
        pending.extend(dispatcher.take())
        if not pending:
            rt.services.outbox.sweep(older_than_s=0.0, republish_after_s=0.0)
            rt.router.sweep()
            pending.extend(dispatcher.take())
            if not pending and _all_ended(rt, order):
                break
            continue
        rng.shuffle(pending)
        batch, pending = pending[:opts.batch], pending[opts.batch:]
        for message in batch:
            if rng.random() < opts.duplicate_p:
                tally["duplicates"] += 1
                twins = [threading.Thread(target=deliver, args=(message,)) for _ in range(2)]
                for th in twins:
                    th.start()
                for th in twins:
                    th.join()
            else:
                deliver(message)
    return _verdict(rt, order, calls, tally, rounds)


def _all_ended(rt: Runtime, order: dict[str, list[str]]) -> bool:
    for ids in order.values():
        for run_id in ids:
            snap = rt.runs.get_run(run_id)
            if snap is None or not snap.run.terminal:
                return False
    return True


def _verdict(rt: Runtime, order: dict[str, list[str]], calls: Counter[str], tally: Counter[str],
             rounds: int) -> dict[str, Any]:
    violations: list[str] = []
    lost = twice = out_of_order = 0
    for thread, ids in order.items():
        runs = [rt.runs.get_run(i) for i in ids]
        for i, snap in zip(ids, runs, strict=True):
            if snap is None or snap.run.status != "completed":
                lost += 1
                violations.append(f"{thread}: run {i} did not complete ({snap.run.status if snap else 'missing'})")
        prompts = [f"{thread}-r{r}" for r in range(len(ids))]
        for p in prompts:
            if calls[p] > 1:
                twice += 1
                violations.append(f"{thread}: {p} was answered {calls[p]} times")
        done = [s.run for s in runs if s is not None]
        starts = [r.started_at or r.created_at for r in done]
        if starts != sorted(starts) or any(later.started_at is not None and later.started_at < earlier.updated_at
                                           for earlier, later in itertools.pairwise(done)):
            out_of_order += 1
            violations.append(f"{thread}: runs did not start in arrival order, one after the other")
        texts = [m.text for m in rt.runs.list_messages("alice", thread, 100) if m.role == "user"]
        if texts != prompts:
            out_of_order += 1
            violations.append(f"{thread}: the thread's prompts are {texts}")
    left = rt.services.outbox.repo.all()
    if left:
        violations.append(f"{len(left)} outbox entries left: {[e.entry_id for e in left[:5]]}")
    return {"scenario": "queue", "threads": len(order), "runs": sum(len(v) for v in order.values()),
            "runs_lost": lost, "runs_started_twice": twice, "threads_out_of_order": out_of_order,
            "outbox_left": len(left), "rounds": rounds, "faults": dict(sorted(tally.items())),
            "violations": violations[:20], "ok": not violations}


def main(argv: list[str] | None = None) -> int:
    p = reliability_parser(__doc__, max_rounds=5000)
    p.add_argument("--threads", type=int, default=20)
    p.add_argument("--runs", type=int, default=5, help="runs per thread (the first starts at once)")
    p.add_argument("--crash-p", type=float, default=0.4)
    p.add_argument("--duplicate-p", type=float, default=0.2)
    p.add_argument("--batch", type=int, default=8)
    return run_on_store(run, p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
