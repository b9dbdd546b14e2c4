"""``features`` (issue 33): new features cost nothing when off, and what each costs when on.

A feature is free when off if a run of a user who does not use it makes no store round trip, reads
and writes no document, and imports no module because of it. Measured, never timed:

- **Round trips and documents**: one ``POST /api/agent/run`` of 4 steps (3 read-only tool calls,
  then the answer) through the HTTP edge (``devserver.create_app``'s test client, every limit at its
  default) on a real store behind the counting wrapper (``bench.instrument``), the user's second
  run (the first creates their limit documents). Every round trip is listed (``call what``) and
  placed in its phase: ``start`` (the request to the first model call), ``step`` (between model
  calls, per tool step) or ``stop`` (after the last model call). A feature's round trips are those
  touching only its collections (a batched read that also fetches a feature's document costs that
  document, not a round trip), its documents those read or written in its collections.
- **Modules**: the modules a cold ``run`` has loaded after its first request (a fresh interpreter,
  functions-framework serving ``main.py``'s ``run``, the real google-genai SDK against the fake
  Gemini server, SQLite), by each feature's module prefixes. The request is a returning user's run
  (an earlier instance served their first), as for the round trips: a user's very first run reads
  their webhooks, MCP servers and A2A agents once (their stamps are unknown until it records them)
  and so imports those repositories; every later cold start does not.

The baseline a feature is compared with is the same run without that feature's trips, documents
and modules, so ``free_when_off`` is ``true`` exactly when all of them are 0. With the feature on
(where this module can turn it on locally: webhooks, budgets), the same run's extra round trips and
documents against the run with it off. Tracing's and workspaces' costs when on are timed in their
own sections (``tracing``, ``sandbox``). ``tests/limits/test_features_off.py`` asserts these counts.

    python -m bench.features [--store sqlite|firestore]  (a few seconds on SQLite)
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from bench.instrument import InstrumentedStore, collection_id
from bench.scenario import STEPS_MARK, bench_registry, bench_settings, step_model
from shared.auth import LocalAuthenticator
from shared.durable.dispatcher import RecordingDispatcher
from shared.models.base import ModelRequest, Turn
from shared.models.scripted import FunctionModel
from shared.runtime import Runtime, set_runtime
from shared.state.docstore import Doc, DocStore, Query, Transaction, Write

T = TypeVar("T")
UID = "feat-bench"
RUN_CONTROL_THREAD = "feat-run-control"
HEADERS = {"Authorization": f"Bearer dev:{UID}"}
STEPS = 4
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclass(frozen=True)
class Feature:
    name: str
    collections: tuple[str, ...]
    """The collection ids only this feature reads or writes."""
    modules: tuple[str, ...]
    """Module prefixes only this feature needs."""
    documents: tuple[str, ...] = ()
    """Documents only this feature reads, in a collection others use too (``limits/budget``)."""
    after_start: tuple[str, ...] = ()
    """Collections this feature alone reads once the run has started, though the start reads them
    too (run control: the stop check between model calls and the queue's check at the stop read
    the thread)."""
    on: str = ""
    """How its cost when on is measured (here, or the section that times it)."""


FEATURES = (
    Feature("workspaces", ("workspaces",), ("shared.workspaces", "shared.tools.sandbox_tools",
                                            "shared.state.workspaces_repo", "sandbox"),
            on="the sandbox section (container_exec, snapshot and restore)"),
    Feature("webhooks", ("webhooks", "deliveries"), ("shared.agent.webhooks", "shared.delivery",
                                                     "shared.state.webhooks_repo", "shared.state.deliveries_repo"),
            on="measured here: one webhook subscribed to run.*"),
    # ``shared.state.thread_queue`` is not run control's alone: it holds the thread's active-run slot
    # that every start on an existing thread checks (the RUN_ACTIVE / APPROVAL_PENDING refusal, the
    # default ``reject`` strategy), beside the queue's strategies; the queue itself, the stop and the
    # cancel are ``shared.agent.run_queue``, loaded only when a run is queued, asked to stop or cancelled.
    Feature("run_control", (), ("shared.agent.run_queue",), after_start=("threads",),
            on="measured here: a run queued behind it on its thread (a run nothing was queued behind and "
               "nobody asked to stop reads no thread and loads no run-control module)"),
    Feature("a2a", ("a2aAgents", "a2aTasks", "pushConfigs"),
            ("a2a", "shared.a2a", "shared.agent.a2a_convert", "shared.agent.a2a_push", "shared.tools.a2a_tools",
             "shared.connectors.user_a2a", "shared.state.a2a_tasks_repo"),
            on="not measured here (needs a remote A2A agent)"),
    Feature("otel", (), ("opentelemetry", "shared.otel", "google.cloud.trace"),
            on="the tracing section (per step off and on, import time)"),
    # Budgets write no collection of their own (a model call's cost is on the ledger's day counter,
    # ``usageDays``, budgets on or off; the month's spend is the sum of its days): their document is
    # the user's ``limits/budget`` (reservations and raised caps), in a collection the limits share.
    Feature("budgets", (), ("shared.usage.budget", "shared.loop.budget_pause",
                            "shared.state.budget_repo"), documents=("limits/budget",),
            on="measured here: the run with budgetUsd and the user's daily and monthly caps set"),
    Feature("mcp", ("mcpServers",), ("mcp", "shared.tools.mcp_tools", "shared.tools.mcp_listings",
                                     "shared.connectors.user_mcp", "shared.state.mcp_servers_repo"),
            on="not measured here (needs an MCP server; tests/agent/test_mcp_user_servers.py)"),
    Feature("agui", (), ("shared.agui", "ag_ui"), on="not measured here"),
)


def _trip_collections(trip: str) -> set[str]:
    """The collection ids a listed round trip (``call what``) touches."""
    call, _, what = trip.partition(" ")
    if call == "commit":
        return set(what.split())
    if call in ("get", "get_many", "txn_get"):
        return {collection_id(p) for p in what.split()}
    return {what.rsplit("/", 1)[-1]} if what else set()  # query, sum_of: the collection's path


def _owned(feature: Feature, trip: str) -> bool:
    """Whether ``trip`` touches only ``feature``'s collections or documents (without the feature it
    would not be made)."""
    call, _, what = trip.partition(" ")
    if call in ("get", "get_many", "txn_get"):
        return bool(what) and all(collection_id(p) in feature.collections
                                  or any(p.endswith("/" + d) for d in feature.documents) for p in what.split())
    cols = _trip_collections(trip)
    return bool(cols) and cols <= set(feature.collections)


class _RecordingTransaction:
    """A transaction noting the paths it reads and writes (the writes of its last attempt)."""

    def __init__(self, inner: Transaction, written: list[str], read: Counter[str]) -> None:
        self._inner = inner
        self._written = written
        self._read = read

    def get(self, path: str) -> Doc | None:
        self._read[path] += 1
        return self._inner.get(path)

    def get_many(self, paths: Sequence[str]) -> list[Doc | None]:
        self._read.update(paths)
        return self._inner.get_many(paths)

    def query(self, query: Query) -> list[Doc]:
        return self._inner.query(query)

    def write(self, write: Write) -> None:
        self._written.append(write.path)
        self._inner.write(write)


class PathCountingStore(InstrumentedStore):
    """The counting wrapper, also counting the documents read and written by path (a feature's
    documents in a collection others use too: ``Feature.documents``)."""

    def __init__(self, inner: DocStore) -> None:
        super().__init__(inner)
        self.paths_read: Counter[str] = Counter()
        self.paths_written: Counter[str] = Counter()

    def get(self, path: str) -> Doc | None:
        self.paths_read[path] += 1
        return super().get(path)

    def get_many(self, paths: Sequence[str]) -> list[Doc | None]:
        self.paths_read.update(paths)
        return super().get_many(paths)

    def commit(self, writes: Sequence[Write]) -> list[str]:
        tokens = super().commit(writes)
        self.paths_written.update(w.path for w in writes)
        return tokens

    def run_transaction(self, fn: Callable[[Transaction], T]) -> T:
        written: list[str] = []

        def recording(t: Transaction) -> T:
            written.clear()
            return fn(_RecordingTransaction(t, written, self.paths_read))

        out = super().run_transaction(recording)
        self.paths_written.update(written)
        return out


def documents_of(feature: Feature, counts: Counter[str] | dict[str, int]) -> int:
    """Of documents counted by path, those that are ``feature``'s own documents (``documents``)."""
    return sum(n for p, n in counts.items() if any(p.endswith("/" + d) for d in feature.documents))


@dataclass
class Run:
    trips: list[str]
    marks: list[int]
    """The round-trip count at each model call."""
    docs: list[dict[str, int]]
    """Documents written so far (by collection) at each model call."""
    docs_read: dict[str, int]
    docs_written: dict[str, int]
    status: str
    paths_read: dict[str, int] = field(default_factory=dict)
    paths_written: dict[str, int] = field(default_factory=dict)


def documents_per_tool_step(run: Run) -> dict[str, float]:
    """Documents written per tool step, by collection (steady state: between model calls 2 and N)."""
    per = _diff(run.docs[-1], run.docs[1])
    return {c: _per_step(n) for c, n in sorted(per.items())}


def phases_of(run: Run) -> dict[str, list[str]]:
    first, last = run.marks[0], run.marks[-1]
    return {"start": run.trips[:first], "step": run.trips[run.marks[1]:run.marks[-1]], "stop": run.trips[last:]}


def measure_run(inner: DocStore, *, setup: Callable[[Any, Runtime], None] | None = None,
                 body: dict[str, Any] | None = None, during: Callable[[Runtime], None] | None = None,
                 **settings: Any) -> Run:
    """The measured run (after a warm-up run and ``setup``); ``during``: done once, in another
    thread (its round trips are not the run's), while the run makes its first model call."""
    from devserver import create_app

    store = PathCountingStore(inner)
    marks: list[int] = []
    docs: list[dict[str, int]] = []
    trips: list[str] = []

    def answer(request: ModelRequest) -> Turn:
        marks.append(len(trips))
        docs.append(dict(store.snapshot()["docs_written"]))
        if during is not None and len(marks) == 1 and trips:
            side = threading.Thread(target=during, args=(rt,))
            side.start()
            side.join()
        return step_model(request)

    conf = bench_settings(google_cloud_project="demo-agent-bench", run_deadline_s=600.0, **settings)
    rt = Runtime(conf, store=store, model=FunctionModel(answer, name="gemini-3-flash-preview"),
                 dispatcher=RecordingDispatcher(), registry=bench_registry(), authenticator=LocalAuthenticator())
    set_runtime(rt)
    try:
        client = create_app().test_client()
        warm = client.post("/api/agent/run", json={"prompt": f"warm up {STEPS_MARK}1"}, headers=HEADERS)
        if warm.status_code != 200:
            raise RuntimeError(f"warm-up run: {warm.status_code} {warm.get_json()}")
        if setup is not None:
            setup(client, rt)
        marks.clear()
        docs.clear()
        trips = store.record_trips()
        before = store.snapshot()
        read_before, written_before = Counter(store.paths_read), Counter(store.paths_written)
        resp = client.post("/api/agent/run", json={"prompt": f"go {STEPS_MARK}{STEPS}", **(body or {})},
                           headers=HEADERS)
        got = resp.get_json()
        if resp.status_code != 200 or len(marks) != STEPS:
            raise RuntimeError(f"run: {resp.status_code} {got}, {len(marks)} model calls")
        delta = InstrumentedStore.delta(store.snapshot(), before)
        return Run(list(trips), list(marks), list(docs), delta["docs_read"], delta["docs_written"], got["status"],
                   _diff(store.paths_read, read_before), _diff(store.paths_written, written_before))
    finally:
        set_runtime(None)


def feature_trips(feature: Feature, phases: dict[str, list[str]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for phase, trips in phases.items():
        mine = [t for t in trips if _owned(feature, t)]
        if phase != "start" and feature.after_start:
            mine += [t for t in trips if t.partition(" ")[0] in ("get", "get_many", "query")
                     and _trip_collections(t) == set(feature.after_start)]
        out[phase] = mine
    return out


def _per_step(n: int) -> float:
    return round(n / (STEPS - 2), 3)


def cold_run_modules(env: dict[str, str] | None = None, *, returning: bool = True) -> list[str]:
    """The modules a fresh ``run`` instance has loaded after serving one run (SQLite, the real
    google-genai SDK against the fake Gemini server; tests/unit/test_cold_run_modules.py).
    ``returning``: the user ran once before, served by another fresh instance (their stamps are
    known); else it is the user's very first run."""
    from bench.fakemodel import tool_then_answer

    serve = ("import json, sys\n"
             "import functions_framework\n"
             "app = functions_framework.create_app('run', 'main.py', None)\n"
             "resp = app.test_client().post('/api/agent/run', headers={'Authorization': 'Bearer dev:alice'},\n"
             "                              json={'prompt': 'what do I drink?'})\n"
             "assert resp.status_code == 200 and resp.get_json()['status'] == 'completed', resp.get_data()\n"
             "print(json.dumps(sorted(sys.modules)))\n")
    with tempfile.TemporaryDirectory(prefix="bench-mods-") as tmp, tool_then_answer(0.0) as fake:
        run_env = {"PATH": "/usr/bin:/bin", "STATE_BACKEND": "sqlite", "SQLITE_PATH": os.path.join(tmp, "s.sqlite3"),
                   "AUTH_MODE": "local", "DISPATCHER": "none", "GOOGLE_CLOUD_PROJECT": "demo-imports",
                   "LOG_LEVEL": "WARNING", **fake.env(), **(env or {})}
        for _ in range(2 if returning else 1):  # the last instance is the one measured
            done = subprocess.run([sys.executable, "-c", serve], cwd=REPO, env=run_env, capture_output=True,
                                  text=True, timeout=120, check=False)
            if done.returncode != 0:
                raise RuntimeError(f"cold run failed: {done.stderr[-2000:]}")
    modules: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return modules


def loaded(modules: list[str], prefixes: tuple[str, ...]) -> list[str]:
    return [m for m in modules if any(m == p or m.startswith(p + ".") for p in prefixes)]


def own_modules(modules: list[str]) -> list[str]:
    """Of ``modules``, this project's (``main``, ``shared``, ``functions``)."""
    return [m for m in modules if m.split(".")[0] in ("main", "shared", "functions")]


def _diff(on: Counter[str] | dict[str, int], off: Counter[str] | dict[str, int]) -> dict[str, int]:
    out = Counter(on)
    out.subtract(off)
    return {k: v for k, v in out.items() if v}


def _on_costs(inner_on: Callable[[], contextlib.AbstractContextManager[DocStore]], off: Run) -> dict[str, Any]:
    """Webhooks, budgets and run control turned on: the run's extra round trips and documents (run
    control: a run queued behind it on its thread during its first model call, against the same
    run on that thread with nothing queued)."""
    key = base64.b64encode(os.urandom(32)).decode()

    def webhook(client: Any, rt: Runtime) -> None:
        resp = client.put("/api/agent/webhooks/bench", json={"url": "http://127.0.0.1:9/hook", "events": ["run.*"]},
                          headers=HEADERS)
        if resp.status_code not in (200, 201):
            raise RuntimeError(f"PUT webhook: {resp.status_code} {resp.get_json()}")

    def queue_behind(rt: Runtime) -> None:
        from shared.api import RunRequest

        rt.agent.start(UID, RunRequest(prompt="queued behind", threadId=RUN_CONTROL_THREAD,
                                       multitaskStrategy="enqueue"))

    on_thread = {"body": {"threadId": RUN_CONTROL_THREAD}}
    with inner_on() as inner:
        off_on_thread = measure_run(inner, **on_thread)  # run control's baseline: the same run, nothing queued
    out: dict[str, Any] = {}
    turned_on: tuple[tuple[str, dict[str, Any], Run], ...] = (
        ("webhooks", {"setup": webhook, "credentials_encryption_key": key, "mcp_allow_private_urls": True}, off),
        ("budgets", {"body": {"budgetUsd": 5.0}, "budget_user_daily_usd": 50.0, "budget_user_monthly_usd": 500.0},
         off),
        ("run_control", {**on_thread, "during": queue_behind}, off_on_thread))
    for name, kwargs, baseline in turned_on:
        with inner_on() as inner:
            run = measure_run(inner, **kwargs)
        on_phases, off_phases = phases_of(run), phases_of(baseline)
        out[name] = {
            "extra_round_trips": {p: len(on_phases[p]) - len(off_phases[p]) for p in on_phases},
            "extra_round_trips_in_all": len(run.trips) - len(baseline.trips),  # the first step's too
            "extra_round_trips_per_tool_step": _per_step(len(on_phases["step"]) - len(off_phases["step"])),
            "extra_documents_written": _diff(run.docs_written, baseline.docs_written),
            "extra_documents_read": _diff(run.docs_read, baseline.docs_read),
            "trips": {p: on_phases[p] for p in on_phases},
        }
    return out


def measure(open_store: Callable[[], contextlib.AbstractContextManager[DocStore]], *,
            modules: list[str] | None = None, with_on: bool = True) -> dict[str, Any]:
    """The ``features`` section: per feature, its cost when off (and on where measured here)."""
    with open_store() as inner:
        off = measure_run(inner)
    phases = phases_of(off)
    modules = cold_run_modules() if modules is None else modules
    features: dict[str, Any] = {}
    for feature in FEATURES:
        trips = feature_trips(feature, phases)
        read = {c: n for c, n in off.docs_read.items() if c in feature.collections}
        written = {c: n for c, n in off.docs_written.items() if c in feature.collections}
        if feature.documents:  # its documents in a shared collection, counted by path
            read["documents"] = documents_of(feature, off.paths_read)
            written["documents"] = documents_of(feature, off.paths_written)
        if feature.after_start:  # the documents of its own reads after the start (run control: the thread)
            read["after_start"] = sum(len(t.split()) - 1 for p in ("step", "stop") for t in trips[p]
                                      if t.partition(" ")[0] in ("get", "get_many"))
        mods = loaded(modules, feature.modules)
        counts = {"start_round_trips": len(trips["start"]),
                  "round_trips_per_tool_step": _per_step(len(trips["step"])),
                  "stop_round_trips": len(trips["stop"]), "documents_read": sum(read.values()),
                  "documents_written": sum(written.values()), "modules_imported": len(mods)}
        features[feature.name] = {"off": {**counts, "trips": trips, "modules": mods},
                                  "free_when_off": not any(counts.values()), "on": feature.on}
    if with_on:
        for name, cost in _on_costs(open_store, off).items():
            features[name]["on_cost"] = cost
    return {
        "scenario": f"POST /api/agent/run, {STEPS} steps ({STEPS - 1} read-only tool calls), a user's second run; "
                    "modules: a cold run instance after its first run",
        "baseline": {"round_trips": {p: len(t) for p, t in phases.items()},
                     "round_trips_per_tool_step": _per_step(len(phases["step"])),
                     "documents_written_per_tool_step": documents_per_tool_step(off),
                     "documents_written": off.docs_written, "documents_read": off.docs_read,
                     "own_modules_of_a_cold_run": len(own_modules(modules)), "modules_of_a_cold_run": len(modules),
                     "trips": phases},
        "features": features,
        "targets": {f"free_when_off_{name}": {"value": {k: v for k, v in f["off"].items()
                                                        if k not in ("trips", "modules")},
                                             "target": 0, "met": f["free_when_off"]}
                    for name, f in features.items()},
    }


@contextlib.contextmanager
def _sqlite() -> Iterator[DocStore]:
    from bench.emulator import sqlite_store

    with tempfile.TemporaryDirectory(prefix="bench-feat-") as tmp, sqlite_store(os.path.join(tmp, "f.sqlite3")) as s:
        yield s


def figures(kind: str = "sqlite", fs_host: str | None = None) -> dict[str, Any]:
    if kind == "sqlite":
        return {"store": "sqlite_file", **measure(_sqlite)}
    from bench.emulator import firestore_store

    return {"store": "firestore_emulator", **measure(lambda: firestore_store(fs_host))}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--store", choices=("firestore", "sqlite"), default="sqlite")
    args = p.parse_args(argv)
    print(json.dumps(figures(args.store), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
