"""``make load``: simulated users stream runs with approvals against ``make dev`` on the Firestore
emulator, then every run is checked in the store. Prints one JSON object on stdout (progress on
stderr) and writes it to ``--out``; exit code 1 if any error was counted or an invariant failed.

What runs (four processes, as on a developer's machine):

- the official Firestore emulator (``FIRESTORE_EMULATOR_HOST`` if set, else started here);
- the fake Gemini server (``bench/load_model.py``): every answer waits ``--model-latency-s``;
- the dev server, ``devserver.py`` exactly as ``make dev`` runs it, with ``STATE_BACKEND=firestore``
  on a fresh project, local auth and the real ``google-genai`` SDK pointed at the fake;
- this driver: ``--users`` threads, each a user ``Bearer dev:load-uN`` on its own keep-alive
  connection, looping until ``--duration-s`` is over (the iteration under way is finished):

  1. ``POST /api/agent/run/stream``: the model asks for ``save_memory`` (a side effect that needs
     approval); the NDJSON stream is read to the pause (a ``result`` event ``awaiting_confirmation``);
  2. ``POST /api/agent/approve``: approve, or reject every ``--reject-every``-th iteration;
  3. ``GET /api/agent/runs/{runId}/events?after=N&follow=1``: followed to the run's ``result``.

Added latency is the runtime's time on top of the model's (each leg makes exactly one model call):

- ``start_to_pause`` = (POST sent → pause event received) - model latency;
- ``approve_to_done`` = (approve sent → final ``result`` event received on the follow stream) -
  model latency. The follow stream polls the store every 0.2 s (``replay_events``), so up to
  0.2 s of it is polling; ``server_approve_to_done`` (decision recorded → run's last commit, from
  the store's timestamps, minus model latency) leaves the polling out;
- ``per_run`` = the sum of both legs for one run.

Errors (all must be 0): an HTTP status other than the expected one (any 5xx and 429 included),
a transport error, a malformed event (not JSON, not a valid event model, ``seq`` not 1, 2, 3, ...)
or a stream that ends anywhere else than where it should, an iteration unfinished at the end.

Store invariant, afterwards, on every run of the project: terminal, or paused with its approval
still pending; events ``1..lastSeq`` all present, exactly once, the last a ``result`` (or
``error``) matching the run's status; the checks of the reliability scenario (``bench/invariants``):
each approved ``save_memory`` executed once (its memory exists), each rejected one never, tool
answers and turns consistent; and the runs the clients saw end as the clients saw them.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import http.client
import json
import os
import secrets
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from bench.procinfo import cpu_seconds
from shared.events.run import RunEvent

REPO = Path(__file__).resolve().parent.parent
PROJECT_PREFIX = "demo-agent-load"
DEFAULT_OUT = Path("var") / "load.json"
READY_TIMEOUT_S = 60.0
HTTP_TIMEOUT_S = 120.0
FINISH_GRACE_S = 120.0
"""How long after ``--duration-s`` the iterations under way may take to finish."""
ERROR_SAMPLES = 20
CHECK_WORKERS = 8
WARMUP_UID = "load-warmup"
"""The user of the one unmeasured run before the load (its errors count, its latencies do not)."""

LIMIT_ENV = {"LIMIT_REQUESTS_PER_MINUTE": "1000000", "LIMIT_ACTIVE_RUNS": "1000", "LIMIT_ACTIVE_SESSIONS": "1000",
             "LIMIT_DAILY_TOKENS": "1000000000"}
"""Per-user limits (docs/limits.md) the dev server gets unless set already: on (their checks cost
what they cost in production) but far above what the load asks, so none answers 429 (an error)."""

_EVENT = TypeAdapter(RunEvent)


# --- measurements ----------------------------------------------------------------------------

@dataclass
class Stats:
    """Everything the users measure; one lock, taken briefly."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    requests: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    error_samples: list[str] = field(default_factory=list)
    runs_started: int = 0
    runs_done: int = 0
    decisions: Counter[str] = field(default_factory=Counter)
    first_event: list[float] = field(default_factory=list)
    start_to_pause: list[float] = field(default_factory=list)
    approve_request: list[float] = field(default_factory=list)
    approve_to_done: list[float] = field(default_factory=list)
    per_run: list[float] = field(default_factory=list)
    seen: dict[str, tuple[str, str]] = field(default_factory=dict)
    """runId -> (uid, the final status the client saw: ``awaiting_confirmation`` until done)."""

    def count(self, route: str) -> None:
        with self.lock:
            self.requests[route] += 1

    def error(self, kind: str, detail: str) -> None:
        with self.lock:
            self.errors[kind] += 1
            if len(self.error_samples) < ERROR_SAMPLES:
                self.error_samples.append(f"{kind}: {detail}"[:500])


def percentiles(values: list[float]) -> dict[str, float | int | None]:
    """Nearest-rank p50/p99 and max, in milliseconds (``values`` in seconds)."""
    if not values:
        return {"n": 0, "p50": None, "p99": None, "max": None}
    ordered = sorted(values)

    def rank(q: float) -> float:
        return ordered[max(0, min(len(ordered) - 1, -(-len(ordered) * q // 100) - 1))]

    return {"n": len(ordered), "p50": round(rank(50) * 1000, 1), "p99": round(rank(99) * 1000, 1),
            "max": round(ordered[-1] * 1000, 1)}


class Failure(Exception):
    """One counted error of an iteration: ``kind`` (http_5xx, transport, ...) and a detail."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind


# --- one simulated user ----------------------------------------------------------------------

class User:
    """One user: its own uid and keep-alive connection; ``loop`` runs iterations until ``stop_at``."""

    def __init__(self, uid: str, port: int, stats: Stats, *, latency_s: float, reject_every: int,
                 think_s: float = 0.0, offset: int = 0, measured: bool = True) -> None:
        self.uid = uid
        self.think_s = think_s
        self.offset = offset
        self.port = port
        self.stats = stats
        self.latency_s = latency_s
        self.reject_every = reject_every
        self.measured = measured
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=HTTP_TIMEOUT_S)
        self.headers = {"Authorization": f"Bearer dev:{self.uid}", "Content-Type": "application/json"}
        self.iterations = 0
        self.busy = False

    def loop(self, stop_at: float) -> None:
        while time.monotonic() < stop_at:
            self.iteration()
        self.conn.close()

    def iteration(self) -> None:
        self.iterations += 1
        self.busy = True
        try:
            self._iteration(self.iterations)
        except Failure as exc:
            self.stats.error(exc.kind, f"{self.uid} #{self.iterations}: {exc}")
            self.conn.close()  # a fresh connection for the next iteration
        except (OSError, http.client.HTTPException) as exc:
            self.stats.error("transport", f"{self.uid} #{self.iterations}: {type(exc).__name__}: {exc}")
            self.conn.close()
        finally:
            self.busy = False

    def _request(self, route: str, method: str, path: str, body: dict[str, Any] | None,
                 expect: int) -> http.client.HTTPResponse:
        self.stats.count(route)
        self.conn.request(method, path, body=None if body is None else json.dumps(body), headers=self.headers)
        resp = self.conn.getresponse()
        if resp.status != expect:
            text = resp.read()[:300].decode("utf-8", "replace")
            kind = "http_5xx" if resp.status >= 500 else "http_429" if resp.status == 429 else "http_other"
            raise Failure(kind, f"{method} {path} answered {resp.status}, expected {expect}: {text}")
        return resp

    def _events(self, resp: http.client.HTTPResponse, after: int) -> Iterator[tuple[float, dict[str, Any]]]:
        """The NDJSON events of ``resp`` with their arrival times; every one validated and numbered
        ``after + 1``, ``after + 2``, ..."""
        kind = resp.getheader("Content-Type", "")
        if not kind.startswith("application/x-ndjson"):
            raise Failure("malformed_event", f"stream Content-Type {kind!r}")
        expected = after + 1
        while True:
            line = resp.readline()
            if not line:
                return
            at = time.monotonic()
            if not line.strip():
                continue
            try:
                event = json.loads(line)
                if event.get("type") == "heartbeat":  # a quiet stream says it is alive (no seq)
                    continue
                _EVENT.validate_python(event)
            except (ValueError, ValidationError) as exc:
                raise Failure("malformed_event", f"{line[:200]!r}: {exc}") from None
            if event["seq"] != expected:
                raise Failure("malformed_event", f"seq {event['seq']} where {expected} was due")
            expected += 1
            yield at, event

    def _iteration(self, i: int) -> None:
        token = f"load-{self.uid}-i{i}"
        # Users reject at different iterations, so even a short load rejects some.
        decision = "reject" if self.reject_every and (i + self.offset) % self.reject_every == 0 else "approve"
        if self.measured:
            with self.stats.lock:
                self.stats.runs_started += 1
        t0 = time.monotonic()
        resp = self._request("POST /api/agent/run/stream", "POST", "/api/agent/run/stream",
                             {"prompt": f"Please save this to memory.\nremember: {token}"}, 200)
        first: float | None = None
        last: dict[str, Any] | None = None
        pause_at = t0
        for at, event in self._events(resp, 0):
            first = first or at
            last, pause_at = event, at
        if last is None or last["type"] != "result" or last["result"]["status"] != "awaiting_confirmation":
            raise Failure("protocol", f"the stream ended with {last} instead of a pause for approval")
        run_id, last_seq = last["result"]["runId"], int(last["seq"])
        approval = last["result"].get("approval") or {}
        if approval.get("tool") != "save_memory":
            raise Failure("protocol", f"run {run_id} paused for {approval} instead of save_memory")
        with self.stats.lock:
            self.stats.seen[run_id] = (self.uid, "awaiting_confirmation")
        if self.think_s:
            time.sleep(self.think_s)  # the user reads the approval request

        t1 = time.monotonic()
        answer = json.loads(self._request("POST /api/agent/approve", "POST", "/api/agent/approve",
                                          {"approvalId": approval["id"], "decision": decision}, 202).read())
        approved_at = time.monotonic()
        if answer.get("runId") != run_id or answer.get("status") != "resume_requested":
            raise Failure("protocol", f"approve answered {answer}")

        resp = self._request("GET /api/agent/runs/{runId}/events?follow=1", "GET",
                             f"/api/agent/runs/{run_id}/events?after={last_seq}&follow=1", None, 200)
        done: dict[str, Any] | None = None
        done_at = approved_at
        tool_status = None
        for at, event in self._events(resp, last_seq):
            if event["type"] == "tool_result":
                tool_status = event["status"]
            done, done_at = event, at
        if done is None or done["type"] != "result" or done["result"]["status"] != "completed":
            raise Failure("protocol", f"run {run_id} ({decision}) followed to {done} instead of a completed result")
        expected = "completed" if decision == "approve" else "rejected"
        if tool_status != expected:
            raise Failure("protocol", f"run {run_id} ({decision}): tool_result {tool_status}, expected {expected}")
        with self.stats.lock:
            self.stats.seen[run_id] = (self.uid, "completed")
            if self.measured:
                self.stats.runs_done += 1
                self.stats.decisions[decision] += 1
                assert first is not None
                s = self.stats
                s.first_event.append(first - t0)
                s.start_to_pause.append(pause_at - t0 - self.latency_s)
                s.approve_request.append(approved_at - t1)
                s.approve_to_done.append(done_at - t1 - self.latency_s)
                s.per_run.append((pause_at - t0) + (done_at - t1) - 2 * self.latency_s)


# --- the processes ---------------------------------------------------------------------------

@dataclass
class Proc:
    name: str
    process: subprocess.Popen[bytes]
    log: Path

    def tail(self, lines: int = 30) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        return "(no log)"

    def stop(self) -> None:
        if self.process.stdin is not None:
            with contextlib.suppress(OSError):
                self.process.stdin.close()
        if self.process.poll() is None:
            self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()


def _spawn(name: str, argv: list[str], env: dict[str, str], log_dir: Path, *,
           read_stdout: bool = False) -> Proc:
    """``argv`` in the repository with its stderr (and stdout unless ``read_stdout``) in
    ``log_dir/name.log``: an unread pipe would fill and block the process on its next log line."""
    log_dir.mkdir(parents=True, exist_ok=True)
    log = log_dir / f"{name}.log"
    with open(log, "wb") as err:
        process = subprocess.Popen(argv, cwd=REPO, env=env, stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE if read_stdout else err, stderr=err)
    return Proc(name, process, log)


@contextlib.contextmanager
def fake_model(latency_s: float, log_dir: Path) -> Iterator[tuple[dict[str, str], Proc]]:
    """The fake Gemini server's process; yields the env that points the SDK at it, and the process."""
    proc = _spawn("fake-model", [sys.executable, "-m", "bench.load_model", "--latency-s", str(latency_s)],
                  dict(os.environ), log_dir, read_stdout=True)
    try:
        assert proc.process.stdout is not None
        line = proc.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the fake model did not start; log {proc.log}:\n{proc.tail()}")
        info = json.loads(line)
        yield {"GEMINI_API_KEY": info["apiKey"], "GEMINI_BASE_URL": info["baseUrl"], "GEMINI_MODEL": info["model"],
               "GEMINI_USE_VERTEX": "false"}, proc
    finally:
        proc.stop()


def free_port() -> int:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def dev_server(env: dict[str, str], log_dir: Path) -> Iterator[tuple[int, Proc]]:
    """``devserver.py`` as ``make dev`` runs it, on a free port; yields once ``/healthz`` answers."""
    port = free_port()
    proc = _spawn("devserver", [sys.executable, "devserver.py"], {**env, "PORT": str(port)}, log_dir)
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            if proc.process.poll() is not None:
                raise RuntimeError(f"the dev server exited ({proc.process.returncode}); log {proc.log}:\n"
                                   f"{proc.tail()}")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                conn.request("GET", "/healthz")
                if conn.getresponse().status == 200:
                    conn.close()
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"the dev server did not answer /healthz within {READY_TIMEOUT_S:.0f} s; "
                                   f"log {proc.log}:\n{proc.tail()}")
            time.sleep(0.1)
        yield port, proc
    finally:
        proc.stop()


def server_env(emulator_host: str, project: str, model_env: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "K_SERVICE"}
    for name, value in LIMIT_ENV.items():
        env.setdefault(name, value)
    env.update(model_env)
    env.update({
        "STATE_BACKEND": "firestore", "FIRESTORE_EMULATOR_HOST": emulator_host, "GOOGLE_CLOUD_PROJECT": project,
        "AUTH_MODE": "local", "DISPATCHER": "inline",
        # Its own key: the load never reads or writes the developer's var/credentials-encryption.key.
        "CREDENTIALS_ENCRYPTION_KEY": base64.b64encode(secrets.token_bytes(32)).decode(),
    })
    return env


# --- the store afterwards --------------------------------------------------------------------

def verify_store(project: str, emulator_host: str, seen: dict[str, tuple[str, str]], *,
                 latency_s: float) -> dict[str, Any]:
    """Check every run of ``project`` in the Firestore emulator (see the module doc)."""
    os.environ["FIRESTORE_EMULATOR_HOST"] = emulator_host
    from google.cloud import firestore

    from shared.config import Settings
    from shared.runtime import Runtime
    from shared.state.firestore_docstore import FirestoreDocStore

    store = FirestoreDocStore(firestore.Client(project=project), owns_client=True)
    try:
        return check_runs(Runtime(Settings(), store=store), seen, latency_s=latency_s)
    finally:
        store.close()


def check_runs(rt: Any, seen: dict[str, tuple[str, str]], *, latency_s: float) -> dict[str, Any]:
    """Every run in ``rt``'s store: see the module doc. ``seen``: what the clients saw of each run."""
    from shared.state import paths
    from shared.state.docstore import Query
    from shared.state.records import RunRecord

    runs = [RunRecord.from_doc(d.data) for d in rt.store.query(Query(paths.runs()))]
    uids = sorted({r.uid for r in runs})
    with ThreadPoolExecutor(CHECK_WORKERS) as pool:  # each check is a handful of emulator round trips
        memories = dict(zip(uids, pool.map(
            lambda uid: {m.id for m in rt.users.list_memories(uid, limit=100_000)}, uids), strict=True))
        checked = list(pool.map(lambda run: _check_run(rt, run, seen.get(run.run_id), memories[run.uid],
                                                       latency_s), runs))
    violations = [f"{run.run_id}: {p}" for run, (problems, _) in zip(runs, checked, strict=True) for p in problems]
    stored = {r.run_id for r in runs}
    violations.extend(f"{run_id}: the client saw it, the store has no such run" for run_id in seen
                      if run_id not in stored)
    return {"ok": not violations, "runs_checked": len(runs),
            "statuses": dict(sorted(Counter(r.status for r in runs).items())),
            "violations_total": len(violations), "violations": violations[:ERROR_SAMPLES],
            "server_approve_to_done_ms": percentiles([t for _, times in checked for t in times])}


def _check_run(rt: Any, run: Any, client: tuple[str, str] | None, memories: set[str],
               latency_s: float) -> tuple[list[str], list[float]]:
    """(problems, server-side approve-to-done times) of one run."""
    from bench.invariants import check_pause, check_run, settled

    problems = _check_events(rt, run)
    times: list[float] = []
    ok, why = settled(rt, run.run_id)
    if not ok:
        problems.append(f"neither terminal nor paused for a pending approval: {run.status} ({why})")
    elif why == "awaiting_approval":
        problems.extend(check_pause(rt, run.run_id))
    else:
        actions = rt.runs.list_actions(run.run_id)
        # save_memory's memory id is derived from its action id: it exists iff the tool ran.
        executed = Counter({a.action_id: 1 for a in actions if f"m-{a.action_id}" in memories})
        problems.extend(check_run(rt, run.run_id, executed).violations)
        if run.uid != WARMUP_UID:
            times = _server_resume(rt, run, actions, latency_s)
    if client is not None and client[1] == "completed" and run.status != "completed":
        problems.append(f"the client saw it completed, the store says {run.status}")
    return problems, times


def _check_events(rt: Any, run: Any) -> list[str]:
    """Events 1..lastSeq, each once, the last one the stop the run's status says."""
    events = rt.runs.list_events(run.run_id)
    seqs = [int(e["seq"]) for e in events]
    if seqs != list(range(1, run.last_seq + 1)):
        return [f"events {seqs} are not 1..{run.last_seq}"]
    if not events:
        return ["no events"]
    last = events[-1]
    for event in events:
        try:
            _EVENT.validate_python(event)
        except ValidationError as exc:
            return [f"stored event {event.get('seq')} is malformed: {exc}"]
    if run.status in ("failed", "deadline_exceeded", "cancelled") and last["type"] == "error":
        return []
    if last["type"] != "result" or last["result"]["status"] != run.status:
        return [f"last event {last['type']} {last.get('result', {}).get('status')} does not match status {run.status}"]
    return []


def _server_resume(rt: Any, run: Any, actions: list[Any], latency_s: float) -> list[float]:
    """Decision recorded -> the run's last commit, minus the one model call in between."""
    out = []
    for action in actions:
        got = rt.runs.get_approval(run.uid, action.approval_id) if action.approval_id else None
        if got is not None and got[0].decided_at is not None:
            out.append(run.updated_at - got[0].decided_at - latency_s)
    return out


# --- the whole load --------------------------------------------------------------------------

def log(message: str) -> None:
    print(f"[load] {message}", file=sys.stderr, flush=True)


def run_load(*, users: int, duration_s: float, latency_s: float, reject_every: int, think_s: float,
             log_dir: Path) -> dict[str, Any]:
    from bench.emulator import firestore_emulator

    project = f"{PROJECT_PREFIX}-{uuid.uuid4().hex[:8]}"
    stats = Stats()
    with contextlib.ExitStack() as stack:
        host = stack.enter_context(firestore_emulator())
        model_env, model = stack.enter_context(fake_model(latency_s, log_dir))
        port, server = stack.enter_context(dev_server(server_env(host, project, model_env), log_dir))
        log(f"dev server on :{port}, Firestore emulator {host}, project {project}, model latency {latency_s} s")
        warm = User(WARMUP_UID, port, stats, latency_s=latency_s, reject_every=0, measured=False)
        warm.iteration()  # one run first: imports and connections warm, as on a serving instance
        warm.conn.close()
        log(f"{users} users for {duration_s:g} s")
        crowd = [User(f"load-u{n}", port, stats, latency_s=latency_s, reject_every=reject_every, think_s=think_s,
                      offset=n) for n in range(1, users + 1)]
        procs = {"devserver": server.process.pid, "fake_model": model.process.pid, "driver": os.getpid()}
        cpu_before = {name: cpu_seconds(pid) for name, pid in procs.items()}
        started = time.monotonic()
        stop_at = started + duration_s
        threads = [threading.Thread(target=u.loop, args=(stop_at,), name=u.uid, daemon=True) for u in crowd]
        for t in threads:
            t.start()
        for t in threads:
            t.join(max(0.0, stop_at + FINISH_GRACE_S - time.monotonic()))
        wall = time.monotonic() - started
        cpu = {name: round(cpu_seconds(pid) - cpu_before[name], 1) for name, pid in procs.items()
               if server.process.poll() is None or name != "devserver"}
        for u in crowd:
            if u.busy:
                stats.error("unfinished", f"{u.uid} still in iteration {u.iterations} {FINISH_GRACE_S:.0f} s "
                                          "after the end")
        if server.process.poll() is not None:
            stats.error("server_exit", f"the dev server exited ({server.process.returncode}): {server.tail(5)}")
        log(f"{stats.runs_done} runs done in {wall:.1f} s; checking the store")
        with stats.lock:
            seen = dict(stats.seen)
        invariant = verify_store(project, host, seen, latency_s=latency_s)
    errors = sum(stats.errors.values())
    return {
        "users": users, "duration_s": duration_s, "wall_s": round(wall, 1), "model_latency_ms": latency_s * 1000,
        "reject_every": reject_every, "think_s": think_s, "store": "firestore-emulator", "project": project,
        "requests": sum(stats.requests.values()), "requests_by_route": dict(sorted(stats.requests.items())),
        "runs": {"started": stats.runs_started, "completed": stats.runs_done, "per_s": round(stats.runs_done / wall, 2),
                 "approved": stats.decisions["approve"], "rejected": stats.decisions["reject"]},
        "added_latency_ms": {"start_to_pause": percentiles(stats.start_to_pause),
                             "approve_to_done": percentiles(stats.approve_to_done),
                             "per_run": percentiles(stats.per_run),
                             "server_approve_to_done": invariant.pop("server_approve_to_done_ms")},
        "raw_ms": {"first_event": percentiles(stats.first_event),
                   "approve_request": percentiles(stats.approve_request)},
        "errors": {"total": errors, "by_kind": dict(sorted(stats.errors.items())), "samples": stats.error_samples},
        "invariant": invariant,
        "machine": {"cpus": os.cpu_count(), "loadavg_1m_after": round(os.getloadavg()[0], 2), "cpu_s": cpu,
                    "devserver_cpu_ms_per_run": round(1000 * cpu["devserver"] / stats.runs_done, 1)
                    if stats.runs_done and "devserver" in cpu else None},
        "ok": errors == 0 and invariant["ok"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.load", description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--duration-s", "--duration", type=float, default=60.0, dest="duration_s")
    parser.add_argument("--model-latency-s", type=float, default=0.5, help="the fake model's wait per call")
    parser.add_argument("--reject-every", type=int, default=5, help="reject every Nth approval of a user (0: never)")
    parser.add_argument("--think-s", type=float, default=0.0, help="a user's pause before deciding (default: none)")
    parser.add_argument("--quick", action="store_true", help="3 users for 5 s (what make test runs)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="also write the JSON here")
    parser.add_argument("--log-dir", type=Path, default=None, help="server logs (default: next to --out)")
    args = parser.parse_args(argv)
    if args.quick:
        args.users, args.duration_s = 3, 5.0
    if args.users < 1 or args.duration_s <= 0 or min(args.model_latency_s, args.reject_every, args.think_s) < 0:
        parser.error("--users must be >= 1, --duration-s > 0, --model-latency-s, --reject-every, --think-s >= 0")
    log_dir = args.log_dir or args.out.parent / "load-logs"
    result = run_load(users=args.users, duration_s=args.duration_s, latency_s=args.model_latency_s,
                      reject_every=args.reject_every, think_s=args.think_s, log_dir=log_dir)
    text = json.dumps(result, indent=2)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n")
    print(text)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
