"""Concurrent approve calls for one approval on Firestore: the losers should get 409
ALREADY_DECIDED; some get TransactionContention (a 500 at the HTTP edge) instead.

    python -m bench.repros.approve_contention [--tries 8] [--callers 6]

Exits 1 when a loser got anything but Conflict.
"""

from __future__ import annotations

import argparse
import sys
import threading
from collections import Counter

from bench.chaos import SCENARIO_MARK, Chaos, RoutedDispatcher, scenario_model
from bench.emulator import firestore_store
from bench.scenario import bench_settings
from shared.agent.approvals import decide
from shared.api import ApproveRequest, RunRequest
from shared.errors import Conflict
from shared.models.scripted import FunctionModel
from shared.runtime import Runtime


def concurrent_decisions(rt: Runtime, dispatcher: RoutedDispatcher, approval_id: str, callers: int) -> list[str]:
    barrier = threading.Barrier(callers)
    outcomes: list[str] = []

    def call() -> None:
        barrier.wait()
        try:
            decide(rt.services, dispatcher, "alice", ApproveRequest(approvalId=approval_id, decision="approve"))
            outcomes.append("ok")
        except Conflict:
            outcomes.append("409")
        except Exception as exc:
            outcomes.append(type(exc).__name__)

    threads = [threading.Thread(target=call) for _ in range(callers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return outcomes


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--tries", type=int, default=8)
    p.add_argument("--callers", type=int, default=6)
    args = p.parse_args()
    seen: Counter[str] = Counter()
    with firestore_store() as store:
        chaos = Chaos(store)
        dispatcher = RoutedDispatcher()
        rt = Runtime(bench_settings(state_backend="firestore"), store=store,
                     model=FunctionModel(scenario_model), dispatcher=dispatcher, registry=chaos.registry())
        for i in range(args.tries):
            started = rt.agent.start("alice", RunRequest(prompt=f"go {SCENARIO_MARK}single t{i}"))
            result = rt.agent.run(rt.agent.context(started))
            assert result.approval is not None
            outcomes = concurrent_decisions(rt, dispatcher, result.approval.id, args.callers)
            seen.update(outcomes)
            print(i, sorted(outcomes), flush=True)
    print(dict(seen))
    bad = sum(v for k, v in seen.items() if k not in ("ok", "409"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
