"""``round_trips`` (issue 33): sequential store round trips on the paths a user waits on.

Counted by ``bench.instrument.InstrumentedStore`` on the calling thread (each get / get_many /
query / commit is one; a transaction is one plus one per read inside it), through the HTTP edge
(``devserver.create_app``'s test client: authentication, the request limit, the daily-token and
active-run limits at their defaults) with a scripted zero-latency model that notes the count at
each of its calls:

- ``run_start``: ``POST /api/agent/run`` of a user who already ran once (their limit documents
  exist), on a new thread, from the request to the first model call
  (``round_trips_to_first_model_call``); ``run_start_on_thread``: the next run on that thread;
- ``tool_step``: the same run asking for 10 steps (9 read-only tool calls): round trips between
  two model calls, steady state (between model calls 2 and 10);
- ``resume``: a run paused for an approval (a side-effect tool), ``POST /api/agent/approve``, then
  the published resume message handled: from the handler's start to the moment the approved side
  effect starts (``round_trips_to_resume``: the reads and the claim that must be durable before
  it), and to the next model call (``round_trips_to_next_model_call``: plus the tool's result
  commit, that tool step's own round trip); the approve request's own count too;
- ``plan_session_start``: ``POST /api/agent/sessions`` until the planning model call;
- ``plan_act``: the confirmed plan's execution (3 tasks x 3 acts): round trips per act.

``with_latency``: the run start and a tool step again on a store that sleeps ``LATENCY_MS`` per
round trip (a real Firestore's ~5-30 ms): time to first model call (median of ``LATENCY_STARTS``
starts) and per tool step, wall ms; ``with_latency_sqlite`` the same on a SQLite file (what the
peers' own starts at that latency use: ``bench/peer_latency.py``, compared in
``targets.ms_to_first_model_call_at_10ms_per_round_trip`` by ``against_peers``).

    python -m bench.round_trips [--store sqlite|firestore]  (a few seconds; part of ``make bench``)
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from bench.instrument import InstrumentedStore
from bench.plan_model import Script
from bench.scenario import STEPS_MARK, bench_registry, bench_settings, step_model
from shared.auth import LocalAuthenticator
from shared.durable.dispatcher import RecordingDispatcher
from shared.models.base import ModelRequest, Turn
from shared.models.scripted import FunctionModel, call, calls_turn, text_turn
from shared.plans import unit
from shared.runtime import Runtime, set_runtime
from shared.state.docstore import DocStore
from shared.tools.context import ToolContext
from shared.tools.registry import ToolRegistry

TARGET_TO_FIRST_MODEL_CALL = 2
TARGET_PER_TOOL_STEP = 1
TARGET_TO_RESUME = 2
TARGET_RESUME_TO_NEXT_MODEL_CALL = 3
"""The floor with exactly-once: the read, the claim (durable before the side effect starts) and the
result (durable before the model hears of it)."""
LATENCY_MS = 10.0
LATENCY_STARTS = 9
"""Run starts timed at ``LATENCY_MS`` per round trip (the median is reported)."""
LONG = 10
UID = "rt-bench"
HEADERS = {"Authorization": f"Bearer dev:{UID}"}
APPROVE_MARK = "notify"


@dataclass
class Calls:
    """What the model saw: the thread's round-trip count and the time at each of its calls."""

    store: InstrumentedStore
    round_trips: list[int] = field(default_factory=list)
    at: list[float] = field(default_factory=list)
    threads: set[int] = field(default_factory=set)
    side_effects: list[int] = field(default_factory=list)
    """The round-trip count each time the side-effect tool started."""

    def note(self) -> None:
        self.round_trips.append(self.store.snapshot()["round_trips"])
        self.at.append(time.perf_counter())
        self.threads.add(threading.get_ident())

    def clear(self) -> None:
        self.round_trips.clear()
        self.at.clear()
        self.threads.clear()
        self.side_effects.clear()

    def side_effect(self) -> None:
        self.side_effects.append(self.store.snapshot()["round_trips"])


def registry(calls: Calls | None = None) -> ToolRegistry:
    """The bench registry plus ``notify``, a side-effect tool (approval needed) touching no store,
    noting the round-trip count when it starts (``calls``)."""
    reg = bench_registry()

    @reg.tool(side_effect=True)
    def notify(ctx: ToolContext, text: str) -> dict[str, Any]:
        """Notify the user's team.

        Args:
            text: The note.
        """
        if calls is not None:
            calls.side_effect()
        return {"sent": True}

    return reg


def _chat_answer(request: ModelRequest) -> Turn:
    first = request.turns[0].text or "" if request.turns else ""
    if first.startswith(APPROVE_MARK):
        done = sum(1 for t in request.turns if t.role == "model")
        return calls_turn(call("notify", {"text": "hi"})) if done == 0 else text_turn("Sent.")
    return step_model(request)


def _runtime(store: InstrumentedStore, calls: Calls, dispatcher: RecordingDispatcher) -> Runtime:
    tasks = ["Task one", "Task two", "Task three"]
    script = Script(tasks=tasks, acts={t: [("lookup", {"key": f"{t}-{a}"}) for a in range(3)] for t in tasks})

    def answer(request: ModelRequest) -> Turn:
        calls.note()
        first = request.turns[0].text or "" if request.turns else ""
        if first.startswith(APPROVE_MARK) or STEPS_MARK in first:
            return _chat_answer(request)
        return script.answer(request)  # plan sessions: planning, acts, reflections

    # Every limit at its default (requests/min, active runs and sessions, daily tokens): their reads
    # and writes are on the path being counted.
    settings = bench_settings(google_cloud_project="demo-agent-bench", run_deadline_s=600.0,
                              plan_steps_per_invocation=1000, plan_yield_margin_s=0.0)
    return Runtime(settings, store=store, model=FunctionModel(answer, name="gemini-3-flash-preview"),
                   dispatcher=dispatcher, registry=registry(calls), authenticator=LocalAuthenticator())


def _post(client: Any, path: str, body: dict[str, Any], expect: int = 200) -> dict[str, Any]:
    resp = client.post(path, json=body, headers=HEADERS)
    out: dict[str, Any] = resp.get_json()
    if resp.status_code != expect:
        raise RuntimeError(f"{path}: {resp.status_code} {out}")
    return out


def _run(client: Any, store: InstrumentedStore, calls: Calls, prompt: str,
         thread_id: str | None = None) -> tuple[int, dict[str, Any]]:
    """One ``POST /api/agent/run``; the round trips before it (the count at its start) and its answer."""
    calls.clear()
    start = store.snapshot()["round_trips"]
    t0 = time.perf_counter()
    body = _post(client, "/api/agent/run", {"prompt": prompt, **({"threadId": thread_id} if thread_id else {})})
    calls.at.insert(0, t0)
    return start, body


def measure(inner: DocStore, *, latency_ms: float = 0.0) -> dict[str, Any]:
    """The figures of the module docstring on ``inner`` (wrapped; ``latency_ms`` per round trip)."""
    from devserver import create_app

    store = InstrumentedStore(inner, latency_s=latency_ms / 1000)
    calls = Calls(store)
    dispatcher = RecordingDispatcher()
    rt = _runtime(store, calls, dispatcher)
    set_runtime(rt)
    try:
        client = create_app().test_client()
        _run(client, store, calls, f"warm up {STEPS_MARK}1")  # creates the user's limit documents
        trips = store.record_trips()
        base = store.snapshot()["round_trips"] - len(trips)
        out: dict[str, Any] = {"latency_ms_per_round_trip": latency_ms}

        start, body = _run(client, store, calls, f"go {STEPS_MARK}1")
        if body.get("status") != "completed" or not calls.round_trips:
            raise RuntimeError(f"run: {body}")
        first = calls.round_trips[0] - start
        out["run_start"] = {"round_trips_to_first_model_call": first,
                            "ms_to_first_model_call": round((calls.at[1] - calls.at[0]) * 1000, 2),
                            "same_thread": len(calls.threads) == 1,
                            "trips": trips[start - base:calls.round_trips[0] - base]}
        if latency_ms:  # a timing: the median of several starts (each a user's next run on a new thread)
            first_ms = out["run_start"]["ms_to_first_model_call"]
            out["run_start"].update(_more_starts(client, store, calls, first, first_ms))
        if not latency_ms:  # the next run on that thread: its history is read
            start, again = _run(client, store, calls, f"again {STEPS_MARK}1", thread_id=body["threadId"])
            if again.get("status") != "completed" or not calls.round_trips:
                raise RuntimeError(f"run on a thread: {again}")
            out["run_start_on_thread"] = {"round_trips_to_first_model_call": calls.round_trips[0] - start,
                                          "trips": trips[start - base:calls.round_trips[0] - base]}

        start, body = _run(client, store, calls, f"go {STEPS_MARK}{LONG}")
        rts = calls.round_trips
        if body.get("status") != "completed" or len(rts) != LONG:
            raise RuntimeError(f"{LONG}-step run: {body}, {len(rts)} model calls")
        at = calls.at[1:]
        out["tool_step"] = {"round_trips_per_tool_step": round((rts[-1] - rts[1]) / (LONG - 2), 3),
                            "between_model_calls": [b - a for a, b in itertools.pairwise(rts)],
                            "ms_per_tool_step": round((at[-1] - at[1]) / (LONG - 2) * 1000, 2),
                            "trips_of_one_step": trips[rts[1] - base:rts[2] - base]}

        if latency_ms:
            return out
        out.update(_resume(client, rt, store, calls, dispatcher))
        out.update(_plans(client, rt, store, calls, dispatcher))
        return out
    finally:
        set_runtime(None)


def _more_starts(client: Any, store: InstrumentedStore, calls: Calls, trips: int, first_ms: float) -> dict[str, Any]:
    ms = [first_ms]
    for _ in range(LATENCY_STARTS - 1):
        start, body = _run(client, store, calls, f"go {STEPS_MARK}1")
        if body.get("status") != "completed" or not calls.round_trips or calls.round_trips[0] - start != trips:
            raise RuntimeError(f"run start at latency: {body}, {calls.round_trips}")
        ms.append(round((calls.at[1] - calls.at[0]) * 1000, 2))
    q = statistics.quantiles(ms, n=4)
    return {"ms_to_first_model_call": round(statistics.median(ms), 2), "quartiles_ms": [round(q[0], 2), round(q[2], 2)],
            "starts": len(ms)}


def _resume(client: Any, rt: Runtime, store: InstrumentedStore, calls: Calls,
            dispatcher: RecordingDispatcher) -> dict[str, Any]:
    _, body = _run(client, store, calls, f"{APPROVE_MARK} the team")
    if body.get("status") != "awaiting_confirmation":
        raise RuntimeError(f"approval run: {body}")
    approval_id = body["approval"]["approvalId"]
    dispatcher.take()
    trips = store.record_trips()
    before = store.snapshot()["round_trips"]
    _post(client, "/api/agent/approve", {"approvalId": approval_id, "decision": "approve"}, expect=202)
    approve = store.snapshot()["round_trips"] - before
    approve_trips = list(trips)
    trips = store.record_trips()
    messages = dispatcher.take()
    if len(messages) != 1:
        raise RuntimeError(f"approve published {len(messages)} messages")
    calls.clear()
    before = store.snapshot()["round_trips"]
    rt.router.handle(messages[0])
    if not calls.round_trips or len(calls.side_effects) != 1:
        raise RuntimeError(f"the resumed run made {len(calls.round_trips)} model calls, "
                           f"{len(calls.side_effects)} side effects")
    to_side_effect, to_model = calls.side_effects[0] - before, calls.round_trips[0] - before
    return {"resume": {"round_trips_to_resume": to_side_effect,
                       "round_trips_to_next_model_call": to_model,
                       "round_trips_of_the_approve_request": approve,
                       "trips": trips[:to_model],
                       "approve_trips": approve_trips,
                       "hinted": messages[0].paused is not None,
                       "what": "round_trips_to_resume: resume message handled -> the approved side effect starts "
                               "(the batched read, the claim); round_trips_to_next_model_call: -> the next model "
                               "call (+ the approved tool's result commit, that tool step's own round trip)"}}


def _plans(client: Any, rt: Runtime, store: InstrumentedStore, calls: Calls,
           dispatcher: RecordingDispatcher) -> dict[str, Any]:
    calls.clear()
    before = store.snapshot()["round_trips"]
    trips = store.record_trips()
    created = _post(client, "/api/agent/sessions", {"prompt": "run the three tasks"}, expect=201)
    if not calls.round_trips:
        raise RuntimeError("planning made no model call")
    start = calls.round_trips[0] - before
    sid = created["sessionId"]
    _post(client, f"/api/agent/sessions/{sid}/confirm", {"planVersion": created["plan"]["version"]}, expect=202)
    before = store.snapshot()["round_trips"]
    trips = store.record_trips()
    while msgs := dispatcher.take():
        for m in msgs:
            rt.router.handle(m)
    total = store.snapshot()["round_trips"] - before
    session, _ = rt.sessions.get_for(UID, sid)
    if session.status != "completed":
        raise RuntimeError(f"plan session ended {session.status}")
    acts = sum(t.acts for t in unit.read(rt.sessions, rt.runs, session).tasks)
    return {"plan_session_start": {"round_trips_to_first_model_call": start, "trips": trips[:start]},
            "plan_act": {"round_trips_per_act": round(total / acts, 3), "acts": acts, "trips": list(trips),
                         "note": "an act = model call + tool (or the task's end) + reflection; includes claims, "
                                 "yields and the next invocations' claims"}}


def met(value: float | None, target: float) -> dict[str, Any]:
    return {"value": value, "target": target, "met": None if value is None else value <= target}


def figures(store: DocStore, with_latency_store: DocStore,
            sqlite_latency_store: DocStore | None = None) -> dict[str, Any]:
    """The counts on ``store``; the timings at ``LATENCY_MS`` per round trip on ``with_latency_store``
    and on ``sqlite_latency_store`` (a SQLite file like the peers' stores; the same store if None)."""
    counted = measure(store)
    slow = measure(with_latency_store, latency_ms=LATENCY_MS)
    slow_sqlite = slow if sqlite_latency_store is None else measure(sqlite_latency_store, latency_ms=LATENCY_MS)
    return {
        **counted,
        "with_latency": slow,
        "with_latency_sqlite": slow_sqlite,
        "targets": {
            "round_trips_to_first_model_call": met(counted["run_start"]["round_trips_to_first_model_call"],
                                                   TARGET_TO_FIRST_MODEL_CALL),
            "round_trips_per_tool_step": met(counted["tool_step"]["round_trips_per_tool_step"],
                                             TARGET_PER_TOOL_STEP),
            "round_trips_to_resume": met(counted["resume"]["round_trips_to_resume"], TARGET_TO_RESUME),
            "round_trips_resume_to_next_model_call": met(counted["resume"]["round_trips_to_next_model_call"],
                                                         TARGET_RESUME_TO_NEXT_MODEL_CALL),
            "approve_request_round_trips": {"value": counted["resume"]["round_trips_of_the_approve_request"],
                                            "target": None, "note": "report only"},
            "plan_session_start_round_trips": {"value": counted["plan_session_start"]
                                               ["round_trips_to_first_model_call"], "target": None,
                                               "note": "report only"},
            "plan_act_round_trips": {"value": counted["plan_act"]["round_trips_per_act"], "target": None,
                                     "note": "report only"},
            "ms_to_first_model_call_at_10ms_per_round_trip": against_peers({
                "value": slow_sqlite["run_start"]["ms_to_first_model_call"],
                "round_trips": slow_sqlite["run_start"]["round_trips_to_first_model_call"],
                **({} if sqlite_latency_store is None else
                   {"value_firestore_emulator": slow["run_start"]["ms_to_first_model_call"]}),
                "floor_at_target_ms": TARGET_TO_FIRST_MODEL_CALL * LATENCY_MS}, None),
        },
    }


def against_peers(entry: dict[str, Any], start: dict[str, Any] | None) -> dict[str, Any]:
    """``targets.ms_to_first_model_call_at_10ms_per_round_trip`` with the peers' own starts at the same
    latency (``peers.start_at_latency``, ``BENCH_PEERS=1``) beside ours: the best (fastest) peer's
    figures, ours / its ms, and every peer's. Report only: the issue asks to show it, with no target."""
    out: dict[str, Any] = {**entry, "target": None, "met": None}
    if not start:
        return {**out, "best_peer": None, "note": "peers not measured (BENCH_PEERS=1 measures their own start)"}
    peers = {f"{r['framework']} {r['config']}": {"ms": r["ms_to_first_model_call"],
                                                 "round_trips": r["round_trips_to_first_model_call"],
                                                 "round_trips_waited": r["round_trips_waited"],
                                                 "input_stored_first": r["input_persisted_before_first_model_call"]}
             for r in start["peers"]}
    best, fastest = peers[start["best"]], peers[start["fastest"]]
    return {**out, "best_peer": start["best"], "best_peer_ms": best["ms"],
            "best_peer_round_trips": best["round_trips"], "best_peer_round_trips_waited": best["round_trips_waited"],
            "ratio_to_best_peer": round(entry["value"] / best["ms"], 3),
            "faster_than_best_peer": entry["value"] < best["ms"],
            "fastest_peer": start["fastest"], "ratio_to_fastest_peer": round(entry["value"] / fastest["ms"], 3),
            "peers": peers,
            "note": "ours: POST /api/agent/run through the HTTP edge on a SQLite file (value) and on the Firestore "
                    "emulator, the run committed before the model call; peers: their own start on their SQLite "
                    "store (bench/peer_latency.py); 10 ms slept per round trip in both. best_peer: the fastest peer "
                    "whose start had stored its input before its first model call; fastest_peer: of all (LangGraph's "
                    "default durability writes its checkpoints in the background)"}


@contextlib.contextmanager
def _stores(kind: str, tmp: str, fs_host: str | None) -> Iterator[tuple[DocStore, DocStore, DocStore | None]]:
    from bench.emulator import firestore_emulator, firestore_store, sqlite_store

    with contextlib.ExitStack() as stack:
        if kind == "sqlite":
            yield (stack.enter_context(sqlite_store(f"{tmp}/rt.sqlite3")),
                   stack.enter_context(sqlite_store(f"{tmp}/rt-slow.sqlite3")), None)
            return
        host = fs_host or stack.enter_context(firestore_emulator())
        yield (stack.enter_context(firestore_store(host)), stack.enter_context(firestore_store(host)),
               stack.enter_context(sqlite_store(f"{tmp}/rt-slow.sqlite3")))


def run(kind: str = "firestore", fs_host: str | None = None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-rt-") as tmp, _stores(kind, tmp, fs_host) as stores:
        return {"store": "firestore_emulator" if kind == "firestore" else "sqlite_file", **figures(*stores)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--store", choices=("firestore", "sqlite"), default="firestore",
                   help="firestore: the emulator (FIRESTORE_EMULATOR_HOST or one started here)")
    args = p.parse_args(argv)
    print(json.dumps(run(args.store), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
