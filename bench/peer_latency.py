"""The peers' own run start on a store that takes ``--latency-ms`` per round trip (issue 33).

Runs in the peers' virtualenv (``bench/peers.py`` starts it, ``BENCH_PEERS=1 make bench``), from a
copy of ``../shared/bench-peers`` (it reuses each peer script's scripted model and tool, so the
scenario is the peer harness's: the model calls ``lookup`` once, then answers)::

    <peers venv>/bin/python peer_latency.py [--latency-ms 10] [--runs 15] [--json out.jsonl]

For each durable peer, a new conversation is started the way the framework's own docs do, with
its durable store on a SQLite file, and the time from the start call to the model's first call
is measured (``ms_to_first_model_call``, median of ``--runs`` after 3 warm-up runs; quartiles
beside). Every call of the framework's store API sleeps ``--latency-ms`` first, and each one is
counted as one round trip (``round_trips_to_first_model_call``: the calls started before the
first model call):

- ``openai_agents SQLiteSession(file)``: ``Runner.run(agent, prompt, session=SQLiteSession(new
  id, file))``; the store API is the ``Session`` protocol (``get_items``, ``add_items``,
  ``pop_item``, ``clear_session``), each an ``await`` of a worker thread's SQLite transaction. The
  session object is built before the clock starts (its constructor creates the tables if missing:
  deployment work, not a start's).
- ``langgraph sync/SqliteSaver``: ``create_react_agent(...).invoke(inputs, {thread_id: new})``
  with the checkpointer's default durability; the store API is the checkpointer's ``get_tuple``,
  ``list``, ``put``, ``put_writes``, ``delete_thread`` (sleeping in the calling thread: LangGraph
  runs its checkpoint writes in background threads, so a write it does not wait for does not delay
  the first model call, which is what it would do with a remote store too).
- ``google_adk SqliteSessionService``: ``create_session`` (a new conversation needs one) then
  ``Runner.run_async``; the store API is the service's ``create_session``, ``get_session``,
  ``list_sessions``, ``delete_session``, ``get_user_state``, ``append_event``.

``input_persisted_before_first_model_call``: a store write (``add_items``, ``put``/``put_writes``,
``create_session``/``append_event``) had returned before the first model call in every start, as
ours has committed the run (LangGraph's default durability writes in the background, so its
first model call may come before its first checkpoint is stored; ``dur=sync`` waits for it).

One store API call = one round trip is the peer's best case (a remote store would need at least
one request per call; several when a call runs several statements outside one batch), as our own
count is one per ``get``/``get_many``/``query``/``commit`` (``bench/instrument.py``). To show that
nothing escapes the count, every SQL statement the process executes is traced
(``sqlite3.Connection.set_trace_callback``): ``sql_statements_to_first_model_call`` and
``sql_statements_outside_store_calls`` (statements run while no store API call was open: 0 means
every database access of the start was inside a counted call). The same start with no latency
(``ms_to_first_model_call_at_0ms``) is the framework's own CPU cost, and ``round_trips_waited`` =
(at the latency - at 0 ms) / the latency: the round trips the start actually waited for (fewer than
those started when a framework writes in the background, as LangGraph's default durability does).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import statistics
import sys
import time
import uuid
import warnings
from collections.abc import Awaitable, Callable
from typing import Any

warnings.filterwarnings("ignore")
WARMUP = 3


class Trace:
    """One process, one start at a time: the store calls and SQL statements of the start measured."""

    def __init__(self) -> None:
        self.latency_s = 0.0
        self.recording = False
        self.open_calls = 0
        self.calls: list[str] = []
        self.sql = 0
        self.sql_outside = 0
        self.first_model_at: float | None = None
        self.calls_before_model: list[str] = []
        self.sql_before_model = 0
        self.writes_done: list[str] = []
        """Store writes that had returned before the first model call (the start's input persisted)."""

    def begin(self) -> float:
        self.recording, self.calls, self.sql, self.sql_outside = True, [], 0, 0
        self.first_model_at, self.calls_before_model, self.sql_before_model = None, [], 0
        self.writes_done = []
        return time.perf_counter()

    def returned(self, name: str, write: bool) -> None:
        if write and self.recording and self.first_model_at is None:
            self.writes_done.append(name)

    def model_called(self) -> None:
        if self.recording and self.first_model_at is None:
            self.first_model_at = time.perf_counter()
            self.calls_before_model = list(self.calls)
            self.sql_before_model = self.sql

    def statement(self, _sql: str) -> None:
        if self.recording:
            self.sql += 1
            self.sql_outside += self.open_calls == 0


TRACE = Trace()
def trace_sqlite() -> None:
    """Every SQLite connection the process opens from now on (the frameworks' included) reports each
    statement it runs to ``TRACE`` (``main`` calls it before any peer is imported)."""
    connect = sqlite3.connect

    def traced_connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn = connect(*args, **kwargs)
        conn.set_trace_callback(TRACE.statement)
        return conn

    sqlite3.connect = traced_connect


def _async_store_call(name: str, method: Callable[..., Awaitable[Any]], write: bool) -> Callable[..., Awaitable[Any]]:
    async def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        TRACE.open_calls += 1
        if TRACE.recording:
            TRACE.calls.append(name)
        try:
            if TRACE.latency_s:
                await asyncio.sleep(TRACE.latency_s)
            return await method(self, *args, **kwargs)
        finally:
            TRACE.open_calls -= 1
            TRACE.returned(name, write)

    return call


def _sync_store_call(name: str, method: Callable[..., Any], write: bool) -> Callable[..., Any]:
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        TRACE.open_calls += 1
        if TRACE.recording:
            TRACE.calls.append(name)
        try:
            if TRACE.latency_s:
                time.sleep(TRACE.latency_s)
            return method(self, *args, **kwargs)
        finally:
            TRACE.open_calls -= 1
            TRACE.returned(name, write)

    return call


def _wrap(cls: type, names: tuple[str, ...], *, writes: tuple[str, ...], is_async: bool) -> None:
    """Every method in ``names`` of ``cls`` sleeps the latency and counts as one round trip; ``writes``
    are those that store something (the start's input is persisted once one of them returned)."""
    for name in names:
        method = getattr(cls, name)
        wrap = _async_store_call if is_async else _sync_store_call
        setattr(cls, name, wrap(f"{cls.__name__}.{name}", method, name in writes))  # type: ignore[operator]


def _notes_model_calls(cls: type, name: str) -> None:
    """The peer script's scripted model notes the time of its first call (``Trace.model_called``)."""
    method = getattr(cls, name)

    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        TRACE.model_called()
        return method(self, *args, **kwargs)

    setattr(cls, name, call)


# ---- the peers -------------------------------------------------------------------------------
async def openai_agents() -> tuple[str, str, Callable[[], Awaitable[str]]]:
    import bench_openai_agents as boa
    from agents import Agent, RunConfig, Runner
    from agents.memory import SQLiteSession

    _wrap(SQLiteSession, ("get_items", "add_items", "pop_item", "clear_session"),
          writes=("add_items", "pop_item", "clear_session"), is_async=True)
    _notes_model_calls(boa.ScriptedModel, "get_response")  # a coroutine function: noted when called
    agent = Agent(name="bench", instructions="You are a bench agent.", model=boa.ScriptedModel(),
                  tools=[boa.lookup_async])
    config = RunConfig(tracing_disabled=True)
    path = boa._fresh_db("oa_latency.sqlite")

    async def start() -> str:
        boa.CURRENT_N["n"] = 1
        session = SQLiteSession(uuid.uuid4().hex, path)  # before the clock: its tables, if missing
        try:
            t0 = TRACE.begin()
            result = await Runner.run(agent, "please look things up", max_turns=100, session=session,
                                      run_config=config)
            TRACE.recording = False
            _note(t0)
            return str(result.final_output)
        finally:
            session.close()

    return "openai_agents", "SQLiteSession(file)", start


def _langgraph(durability: str | None) -> Callable[[], Awaitable[tuple[str, str, Callable[[], Awaitable[str]]]]]:
    async def peer() -> tuple[str, str, Callable[[], Awaitable[str]]]:
        import bench_langgraph as blg
        from langgraph.checkpoint.sqlite import SqliteSaver
        from langgraph.prebuilt import create_react_agent

        if not hasattr(SqliteSaver, "_counted"):
            _wrap(SqliteSaver, ("get_tuple", "list", "put", "put_writes", "delete_thread"),
                  writes=("put", "put_writes", "delete_thread"), is_async=False)
            _notes_model_calls(blg.ScriptedChatModel, "_generate")
            SqliteSaver._counted = True  # type: ignore[attr-defined]
        conn = sqlite3.connect(blg._fresh_db(f"lg_latency_{durability}.sqlite"), check_same_thread=False)
        saver = SqliteSaver(conn)
        saver.setup()
        graph = create_react_agent(blg.ScriptedChatModel(), [blg.lookup_sync], checkpointer=saver)
        extra = {} if durability is None else {"durability": durability}

        async def start() -> str:
            blg.CURRENT_N["n"] = 1
            t0 = TRACE.begin()
            out = graph.invoke(blg._inputs(), {"recursion_limit": 100,
                                               "configurable": {"thread_id": uuid.uuid4().hex}}, **extra)
            TRACE.recording = False
            _note(t0)
            return str(out["messages"][-1].content)

        return "langgraph", "sync/SqliteSaver" + (f"/dur={durability}" if durability else ""), start

    return peer


async def google_adk() -> tuple[str, str, Callable[[], Awaitable[str]]]:
    import bench_adk as badk
    from google.adk.agents import LlmAgent
    from google.adk.runners import Runner
    from google.adk.sessions.sqlite_session_service import SqliteSessionService

    _wrap(SqliteSessionService, ("create_session", "get_session", "list_sessions", "delete_session",
                                 "get_user_state", "append_event"),
          writes=("create_session", "delete_session", "append_event"), is_async=True)
    _notes_model_calls(badk.ScriptedLlm, "generate_content_async")  # called, then its generator iterated
    service = SqliteSessionService(badk._fresh_db("adk_latency.db"))
    badk.lookup.__name__ = "lookup"
    agent = LlmAgent(name="bench", model=badk.ScriptedLlm(model="scripted"), instruction="You are a bench agent.",
                     tools=[badk.lookup])
    runner = Runner(app_name=badk.APP, agent=agent, session_service=service)

    async def start() -> str:
        badk.CURRENT_N["n"] = 1
        final = ""
        t0 = TRACE.begin()
        session = await service.create_session(app_name=badk.APP, user_id=badk.USER, session_id=uuid.uuid4().hex)
        async for ev in runner.run_async(user_id=badk.USER, session_id=session.id, new_message=badk.MSG):
            if ev.is_final_response() and ev.content and ev.content.parts and ev.content.parts[0].text:
                final = ev.content.parts[0].text
        TRACE.recording = False
        _note(t0)
        return final

    return "google_adk", "SqliteSessionService", start


PEERS = {"openai_agents": openai_agents, "langgraph": _langgraph(None), "langgraph_sync": _langgraph("sync"),
         "google_adk": google_adk}
SAMPLES: list[dict[str, Any]] = []


def _note(t0: float) -> None:
    if TRACE.first_model_at is None:
        raise RuntimeError("the run made no model call")
    SAMPLES.append({"ms": (TRACE.first_model_at - t0) * 1000, "calls": TRACE.calls_before_model,
                    "writes_done": list(TRACE.writes_done),
                    "sql": TRACE.sql_before_model, "sql_outside": TRACE.sql_outside, "calls_per_run": len(TRACE.calls)})


def _quartiles(xs: list[float]) -> list[float]:
    q = statistics.quantiles(xs, n=4)
    return [round(q[0], 2), round(q[2], 2)]


async def measure(name: str, latency_ms: float, runs: int) -> dict[str, Any]:
    """``runs`` starts at ``latency_ms`` per round trip, each beside one at 0 ms (alternating, so the
    machine's drift hits both), after ``WARMUP`` of each."""
    import common

    framework, config, start = await PEERS[name]()
    samples: dict[float, list[dict[str, Any]]] = {0.0: [], latency_ms: []}
    for i in range(WARMUP + runs):
        for latency in samples:
            TRACE.latency_s = latency / 1000
            SAMPLES.clear()
            final = await start()
            if final != common.EXPECTED_FINAL:
                raise RuntimeError(f"{framework}: unexpected final output {final!r}")
            if i >= WARMUP:
                samples[latency].append(SAMPLES[-1])
    got = samples[latency_ms]
    ms = [s["ms"] for s in got]
    median, median_0 = statistics.median(ms), statistics.median(s["ms"] for s in samples[0.0])
    trips = sorted({len(s["calls"]) for s in got})
    return {
        "framework": framework, "config": config, "latency_ms_per_round_trip": latency_ms, "runs": runs,
        "ms_to_first_model_call": round(median, 2), "quartiles_ms": _quartiles(ms),
        "ms_to_first_model_call_at_0ms": round(median_0, 2),
        "round_trips_to_first_model_call": trips[0] if len(trips) == 1 else trips,
        "round_trips_waited": round((median - median_0) / latency_ms, 1),
        "store_calls_to_first_model_call": got[-1]["calls"],
        "store_calls_per_run": got[-1]["calls_per_run"],
        "writes_returned_before_first_model_call": got[-1]["writes_done"],
        "input_persisted_before_first_model_call": all(s["writes_done"] for s in got),
        "sql_statements_to_first_model_call": got[-1]["sql"],
        "sql_statements_outside_store_calls": max(s["sql_outside"] for s in got),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--latency-ms", type=float, default=10.0)
    p.add_argument("--runs", type=int, default=15)
    p.add_argument("--only", choices=sorted(PEERS), action="append", help="one peer (repeatable); default all")
    p.add_argument("--json", help="append one JSON line per peer to this file")
    args = p.parse_args(argv)
    sys.path.insert(0, os.getcwd())  # the peer scripts (a copy of ../shared/bench-peers)
    trace_sqlite()
    rows = []
    for name in args.only or list(PEERS):
        row = asyncio.run(measure(name, args.latency_ms, args.runs))
        print(json.dumps(row), flush=True)
        rows.append(row)
    if args.json:
        with open(args.json, "a") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
