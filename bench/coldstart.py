"""Cold start per function: process start -> first response of ``functions-framework --target FN``,
against the imports the function truly needs, each timed in a fresh interpreter (``figures``: the
``cold_start`` section of ``make bench``).

Baselines (issue 33):
- ``run``, ``stream`` and ``goals``: the SDKs' own first use (``bench/sdk_first_use_fn.py``: both
  SDKs imported, one Firestore read and write, one streamed Gemini call), served the same way;
  ``overhead_pct_vs_sdk_first_use``, target +10 %.
- ``approve``, ``resume`` and ``runs`` ("within +10 % of the imports they need"):
  ``overhead_pct_vs_sdk_first_read``, against a function served the same way that imports
  Firestore (the SDK these requests need: ``Probe.needs``; ``tests/unit/test_entry_point_imports.py``
  checks that the refused decision and the unknown run import no Pub/Sub) and whose first request
  creates the client and reads one document (``bench/sdk_first_read_fn.py``), started in every
  round like ours. Until issue 33f the target was ``overhead_pct_vs_joint_imports``: the floor (a
  trivial function served the same way) + the SDKs' joint import time measured once, in-process,
  before the rounds. That baseline leaves out the client's channel and first RPC, which no request
  can skip, and is not paired: its import time is taken at another moment than the rounds, so at
  load average ~10 the figure came out at -35 % where a quiet machine gave +50 %. Kept for every
  function for history, with ``overhead_pct`` (floor + the sum of the SDKs' separate import times,
  issue 2's baseline).

Stability (issue 33: the figure moved ±20 points between runs): each round starts every function
once (the baselines too), in an order rotated per round, so the machine's drift hits all alike; an
overhead is the median over rounds of the per-round ratio to the baseline started in the same round
(``*_quartiles``: its spread). 15 rounds (``BENCH_COLD_ROUNDS``); ``*_halves``: the same median over
the even and over the odd rounds, two independent estimates from one run, whose distance says how
far the figure may move between runs (``stable``: within 10 points).

Our own sources are byte-compiled before each start, as the SDKs' are (pip compiles them at
install): otherwise the figure would depend on which ``__pycache__`` files happen to be current
(the benchmarks run with ``PYTHONDONTWRITEBYTECODE=1``, so a source edited since its last
compilation is recompiled on every start; for ``run`` compiling everything it imports costs ~50 ms).
"""

from __future__ import annotations

import argparse
import base64
import compileall
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

FF = os.path.join(os.path.dirname(sys.executable), "functions-framework")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OWN_SOURCES = ("main.py", "functions", "shared")
ALICE = "Bearer dev:alice"


@dataclass(frozen=True)
class Probe:
    """One function's first request."""

    target: str
    method: str
    path: str
    body: dict[str, Any] | None
    needs: tuple[str, ...]
    """SDK modules the function truly needs besides functions_framework."""
    signature: str = "http"
    headers: dict[str, str] = field(default_factory=dict)


def pubsub_event(message: dict[str, Any]) -> tuple[dict[str, str], dict[str, Any]]:
    """A binary-mode CloudEvent as Pub/Sub push (Eventarc) delivers it to ``resume``."""
    headers = {"ce-id": f"bench-{time.time_ns()}", "ce-specversion": "1.0",
               "ce-source": "//pubsub.googleapis.com/projects/demo/topics/agent-resume",
               "ce-type": "google.cloud.pubsub.topic.v1.messagePublished", "Content-Type": "application/json"}
    data = {"message": {"data": base64.b64encode(json.dumps(message).encode()).decode(),
                        "messageId": "1", "publishTime": "2026-01-01T00:00:00Z"},
            "subscription": "projects/demo/subscriptions/agent-resume"}
    return headers, data


def import_seconds(module: str, repeats: int) -> float:
    """Median import time of ``module`` in fresh interpreters (measured inside the process)."""
    code = (f"import time; t = time.perf_counter(); import {module}; "
            f"print(time.perf_counter() - t)")
    times = []
    for _ in range(repeats):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        times.append(float(out.stdout.strip()))
    return statistics.median(times)


def marginal_import_seconds(modules: tuple[str, ...], repeats: int) -> float:
    """Median time to import ``modules`` together in a fresh interpreter that has already imported
    functions_framework (shared dependencies count once): what a function pays beyond the floor."""
    if not modules:
        return 0.0
    code = ("import functions_framework, time; t = time.perf_counter(); "
            f"import {', '.join(modules)}; print(time.perf_counter() - t)")
    times = []
    for _ in range(repeats):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        times.append(float(out.stdout.strip()))
    return statistics.median(times)


def compile_own_sources(root: str = REPO) -> None:
    """Byte-compile ``main.py``, ``functions/`` and ``shared/`` (only what is stale), untimed."""
    for name in OWN_SOURCES:
        path = os.path.join(root, name)
        if os.path.isdir(path):
            compileall.compile_dir(path, quiet=2)
        elif os.path.isfile(path):
            compileall.compile_file(path, quiet=2)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _request(port: int, probe: Probe) -> int:
    headers = {"Authorization": ALICE, **probe.headers}
    data = None
    if probe.body is not None:
        data = json.dumps(probe.body).encode()
        headers.setdefault("Content-Type", "application/json")
    req = urllib.request.Request(f"http://127.0.0.1:{port}{probe.path}", data=data, headers=headers,
                                 method=probe.method)
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            resp.read()
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        exc.read()
        return int(exc.code)


def _tree_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) of ``pid`` and its live descendants (functions-framework serves
    through gunicorn: the app is imported in the master, the request handled in a forked worker).

    Per process, the larger of two readings: the sum of its threads' ``schedstat`` run times
    (nanoseconds, so a start of ~0.4 s is read to the microsecond; threads that already exited are
    not in it) and ``stat``'s utime + stime (those threads included, but counted in clock ticks of
    10 ms, which alone moved a per-round ratio by up to 3 points)."""
    total, todo = 0.0, [pid]
    tick = os.sysconf("SC_CLK_TCK")
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            ticks = (int(fields[11]) + int(fields[12])) / tick  # utime, stime (fields 14 and 15)
            ran_ns = 0
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo += [int(c) for c in f.read().split()]
                with contextlib.suppress(FileNotFoundError, ProcessLookupError, ValueError, IndexError), \
                        open(f"/proc/{p}/task/{task}/schedstat") as f:
                    ran_ns += int(f.read().split()[0])
            total += max(ticks, ran_ns / 1e9)
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total


@dataclass(frozen=True)
class ColdStart:
    seconds: float
    """Popen to the first complete response (wall)."""
    status: int
    cpu_s: float
    """CPU time of the function's processes until then: what the start cost, whatever the machine's
    load (a wait on the store or the model costs none)."""


def cold_start_once(probe: Probe, env: dict[str, str], source: str = "main.py") -> ColdStart:
    """One cold start of ``probe``'s function and its first request."""
    compile_own_sources()
    port = _free_port()
    cmd = [FF, "--target", probe.target, "--source", source, "--signature-type", probe.signature,
           "--host", "127.0.0.1", "--port", str(port)]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = t0 + 60
        while True:
            try:
                status = _request(port, probe)
                seconds = time.perf_counter() - t0
                return ColdStart(seconds, status, _tree_cpu_s(proc.pid))
            except (ConnectionError, urllib.error.URLError):
                if proc.poll() is not None:
                    err = proc.stderr.read().decode()[-2000:] if proc.stderr else ""
                    raise RuntimeError(f"{probe.target} exited before answering: {err}") from None
                if time.perf_counter() > deadline:
                    raise TimeoutError(f"{probe.target} did not answer within 60 s") from None
                time.sleep(0.005)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# ---- the figures (``make bench``'s ``cold_start``) --------------------------------------------
GENAI, FIRESTORE, PUBSUB, FF_MODULE = "google.genai", "google.cloud.firestore", "google.cloud.pubsub_v1", \
    "functions_framework"
TARGET_PCT = 10.0
"""Issue 33: run, stream, goals within +10 % of the SDKs' first use; approve, resume, runs within +10 %
of the imports they need."""
VS_FIRST_USE = ("run", "stream", "goals")
VS_IMPORTS = ("approve", "resume", "runs")
ROUNDS, QUICK_ROUNDS, MAX_ROUNDS = 15, 3, 25
"""At least ``ROUNDS`` rounds; then two more at a time while a target's figure is not ``stable`` (wall or
CPU), up to ``MAX_ROUNDS`` (``BENCH_COLD_ROUNDS`` / ``BENCH_COLD_MAX_ROUNDS``, ``--rounds`` /
``--max-rounds``)."""
STABLE_POINTS = 10.0
"""The two halves' medians within this many points: the figure does not move much between runs."""
HELLO = Probe("hello", "GET", "/", None, ())
FIRST_USE = Probe("first_use", "GET", "/", None, ())
FIRST_READ = Probe("first_read", "GET", "/", None, ())
FIRST_READ_PYDANTIC = Probe("first_read_pydantic", "GET", "/", None, ())
SOURCES = {"hello": os.path.join("bench", "hello_fn.py"), "first_use": os.path.join("bench", "sdk_first_use_fn.py"),
           "first_read": os.path.join("bench", "sdk_first_read_fn.py"),
           "first_read_pydantic": os.path.join("bench", "sdk_first_read_pydantic_fn.py")}
BASELINES = (HELLO, FIRST_USE, FIRST_READ, FIRST_READ_PYDANTIC)


def probes(run_id: str = "run_doesnotexist") -> list[Probe]:
    """Each function's first request (production configuration: Firestore, Gemini, Pub/Sub).
    ``runs`` reads ``run_id`` (a completed run of alice's, :func:`seed_run`: what a console polls);
    ``approve`` decides an approval that does not exist and ``resume`` gets the message of a run that
    does not exist (a real decision or resumption would publish to Pub/Sub, which the benchmark has
    no server for): both answer from one Firestore read, so they need Firestore alone (a decision
    that is recorded also imports Pub/Sub to publish the run's resume message)."""
    headers, data = pubsub_event({"runId": "run_doesnotexist", "uid": "alice", "approvalId": "apr_x"})
    return [
        Probe("run", "POST", "/api/agent/run", {"prompt": "what do I drink?"}, (GENAI, FIRESTORE)),
        Probe("stream", "POST", "/api/agent/run/stream", {"prompt": "what do I drink?"}, (GENAI, FIRESTORE)),
        Probe("runs", "GET", f"/api/agent/runs/{run_id}", None, (FIRESTORE,)),
        Probe("approve", "POST", "/api/agent/approve", {"approvalId": "apr_doesnotexist", "decision": "approve"},
              (FIRESTORE,)),
        Probe("resume", "POST", "/", data, (FIRESTORE,), signature="cloudevent", headers=headers),
        # goals meters every model call into the usage ledger (the store): it needs Firestore too.
        Probe("goals", "POST", "/agent/run", {"message": "I want to run a marathon in the spring"}, (GENAI, FIRESTORE)),
    ]


SEED_RUN = """
from shared.api import RunRequest
from shared.config import Settings
from shared.durable.dispatcher import RecordingDispatcher
from shared.models.scripted import ScriptedModel, text_turn
from shared.runtime import Runtime
rt = Runtime(Settings.from_env(), model=ScriptedModel([text_turn("You drink tea.")]), dispatcher=RecordingDispatcher())
result = rt.agent.run(rt.agent.context(rt.agent.start("alice", RunRequest(prompt="what do I drink?"))))
assert result.status == "completed", result
print(result.run_id)
"""


def seed_run(env: dict[str, str]) -> str:
    """A completed run of alice's in the store ``env`` configures (the ``runs`` probe reads it)."""
    done = subprocess.run([sys.executable, "-c", SEED_RUN], env=env, cwd=REPO, capture_output=True, text=True,
                          timeout=120, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"seeding a run failed: {done.stderr[-2000:]}")
    return done.stdout.strip().splitlines()[-1]


def _pct(values: list[float]) -> dict[str, Any]:
    """Median and quartiles of per-round overheads (fractions), in percent; ``halves``: the median
    over the even rounds and over the odd ones (two independent estimates of the same figure)."""
    q = statistics.quantiles(values, n=4, method="inclusive") if len(values) > 1 else [values[0]] * 3
    halves = [round(statistics.median(h) * 100, 1) for h in (values[0::2], values[1::2]) if h]
    return {"median": round(statistics.median(values) * 100, 1), "q1": round(q[0] * 100, 1),
            "q3": round(q[2] * 100, 1), "halves": halves,
            "stable": len(halves) == 2 and abs(halves[0] - halves[1]) <= STABLE_POINTS}


def unstable(got: dict[str, list[ColdStart]]) -> list[str]:
    """The targets whose figure is not stable yet, wall or CPU (``run:wall``, ``approve:cpu``...)."""
    out = []
    for names, base in ((VS_FIRST_USE, "first_use"), (VS_IMPORTS, "first_read")):
        for name in names:
            if not got.get(name) or not got.get(base):
                continue  # failed: reported as an error, no figure to wait for
            for clock in ("wall", "cpu"):
                ours = [c.seconds if clock == "wall" else c.cpu_s for c in got[name]]
                theirs = [c.seconds if clock == "wall" else c.cpu_s for c in got[base]]
                if not _paired(ours, theirs)["stable"]:
                    out.append(f"{name}:{clock}")
    return out


def _timed_rounds(env: dict[str, str], rounds: int, log: Any, run_id: str = "run_doesnotexist",
                  max_rounds: int | None = None) -> tuple[dict[str, list[ColdStart]], dict[str, str]]:
    """Per probe, its cold starts round by round (a function that failed once is not started again:
    its list stops there, and its error is reported): ``rounds``, then two more at a time while a
    target's figure is not stable, up to ``max_rounds``."""
    order = [*BASELINES, *probes(run_id)]
    got: dict[str, list[ColdStart]] = {p.target: [] for p in order}
    errors: dict[str, str] = {}
    r, planned, cap = 0, rounds, max(rounds, max_rounds or rounds)
    while r < planned:
        log(f"cold start: round {r + 1}/{planned}")
        shift = r % len(order)
        for probe in order[shift:] + order[:shift]:  # rotated: no function always runs first or last
            if probe.target in errors:
                continue
            try:
                got[probe.target].append(cold_start_once(probe, env, SOURCES.get(probe.target, "main.py")))
            except Exception as exc:  # a function that cannot start is reported, not hidden
                errors[probe.target] = f"{type(exc).__name__}: {exc}"[:500]
        r += 1
        if r == planned < cap and (waiting := unstable(got)):
            planned = min(cap, planned + 2)
            log(f"cold start: not stable yet ({', '.join(waiting)}): rounds up to {planned}")
    return got, errors


def _paired(ours: list[float], base: list[float], extra_s: float = 0.0) -> dict[str, Any]:
    """Median and quartiles (percent) of ``ours[r] / (base[r] + extra_s) - 1`` over the rounds."""
    return _pct([a / (b + extra_s) - 1 for a, b in zip(ours, base, strict=False)])


def figures(env: dict[str, str], *, quick: bool, log: Any, rounds: int = 0, max_rounds: int = 0) -> dict[str, Any]:
    """The ``cold_start`` section: every function's cold start against its baselines (module docstring)."""
    rounds = rounds or int(os.environ.get("BENCH_COLD_ROUNDS", "0")) or (QUICK_ROUNDS if quick else ROUNDS)
    max_rounds = max_rounds or int(os.environ.get("BENCH_COLD_MAX_ROUNDS", "0")) or (rounds if quick else MAX_ROUNDS)
    repeats = 3 if quick else 5
    log("cold start: import times in fresh interpreters")
    imports = {m: round(import_seconds(m, repeats), 3) for m in (FF_MODULE, GENAI, FIRESTORE, PUBSUB)}
    joint = {p.needs: marginal_import_seconds(p.needs, repeats) for p in probes()}
    own = round(marginal_import_seconds(("main",), repeats), 3)
    log("cold start: warming the emulator up (one untimed start of run and of the SDK function)")
    cold_start_once(probes()[0], env)  # the emulator's first requests are slow, not ours
    cold_start_once(FIRST_USE, env, SOURCES["first_use"])
    run_id = seed_run(env)
    got, errors = _timed_rounds(env, rounds, log, run_id, max_rounds)
    wall = {name: [c.seconds for c in starts] for name, starts in got.items()}
    cpu = {name: [c.cpu_s for c in starts] for name, starts in got.items()}
    floor = statistics.median(wall["hello"])
    first_use = statistics.median(wall["first_use"]) if wall["first_use"] else None
    functions: dict[str, Any] = {}
    first_read = wall["first_read"]
    with_pydantic = cpu["first_read_pydantic"]
    for probe in probes(run_id):
        name = probe.target
        if name in errors or not wall[name]:
            functions[name] = {"error": errors.get(name, "no start measured")}
            continue
        med = statistics.median(wall[name])
        summed = floor + sum(imports[m] for m in probe.needs)
        jointly = joint[probe.needs]
        vs_joint = _paired(wall[name], wall["hello"], jointly)  # the floor started in the same round
        row: dict[str, Any] = {
            "seconds": round(med, 3), "seconds_min": round(min(wall[name]), 3),
            "seconds_max": round(max(wall[name]), 3), "cpu_s": round(statistics.median(cpu[name]), 3),
            "statuses": sorted({c.status for c in got[name]}), "needs": [FF_MODULE, *probe.needs],
            "rounds_s": [round(x, 3) for x in wall[name]], "rounds_cpu_s": [round(x, 3) for x in cpu[name]],
            "baseline_s": round(summed, 3),
            "import_sum_s": round(imports[FF_MODULE] + sum(imports[m] for m in probe.needs), 3),
            "overhead_pct": round((med - summed) / summed * 100, 1), "target_pct": TARGET_PCT,
            "met": (med - summed) / summed * 100 <= TARGET_PCT,
            "baseline_joint_imports_s": round(floor + jointly, 3),
            "overhead_pct_vs_joint_imports": vs_joint["median"],
            "overhead_pct_vs_joint_imports_quartiles": [vs_joint["q1"], vs_joint["q3"]],
            "overhead_pct_vs_joint_imports_halves": vs_joint["halves"], "stable_vs_joint_imports": vs_joint["stable"],
            "met_vs_joint_imports": vs_joint["median"] <= TARGET_PCT}
        if name in VS_IMPORTS and first_read:
            vs_read = _paired(wall[name], first_read)
            vs_read_cpu = _paired(cpu[name], cpu["first_read"])
            row.update({"baseline_sdk_first_read_s": round(statistics.median(first_read), 3),
                        "overhead_pct_vs_sdk_first_read": vs_read["median"],
                        "overhead_pct_vs_sdk_first_read_quartiles": [vs_read["q1"], vs_read["q3"]],
                        "overhead_pct_vs_sdk_first_read_halves": vs_read["halves"],
                        "stable_vs_sdk_first_read": vs_read["stable"],
                        "met_vs_sdk_first_read": vs_read["median"] <= TARGET_PCT,
                        "cpu_overhead_pct_vs_sdk_first_read": vs_read_cpu["median"],
                        "cpu_overhead_pct_vs_sdk_first_read_quartiles": [vs_read_cpu["q1"], vs_read_cpu["q3"]],
                        "cpu_overhead_pct_vs_sdk_first_read_halves": vs_read_cpu["halves"],
                        "cpu_stable_vs_sdk_first_read": vs_read_cpu["stable"],
                        "cpu_met_vs_sdk_first_read": vs_read_cpu["median"] <= TARGET_PCT})
            if with_pydantic:
                vs_pyd = _paired(wall[name], wall["first_read_pydantic"])
                vs_pyd_cpu = _paired(cpu[name], with_pydantic)
                row.update({"overhead_pct_vs_first_read_with_pydantic": vs_pyd["median"],
                            "overhead_pct_vs_first_read_with_pydantic_quartiles": [vs_pyd["q1"], vs_pyd["q3"]],
                            "overhead_pct_vs_first_read_with_pydantic_halves": vs_pyd["halves"],
                            "stable_vs_first_read_with_pydantic": vs_pyd["stable"],
                            "met_vs_first_read_with_pydantic": vs_pyd["median"] <= TARGET_PCT,
                            "cpu_overhead_pct_vs_first_read_with_pydantic": vs_pyd_cpu["median"],
                            "cpu_overhead_pct_vs_first_read_with_pydantic_halves": vs_pyd_cpu["halves"],
                            "cpu_stable_vs_first_read_with_pydantic": vs_pyd_cpu["stable"],
                            "cpu_met_vs_first_read_with_pydantic": vs_pyd_cpu["median"] <= TARGET_PCT})
        if name in VS_FIRST_USE and first_use is not None:
            vs_first = _paired(wall[name], wall["first_use"])
            vs_first_cpu = _paired(cpu[name], cpu["first_use"])
            row.update({"baseline_sdk_first_use_s": round(first_use, 3),
                        "overhead_pct_vs_sdk_first_use": vs_first["median"],
                        "overhead_pct_vs_sdk_first_use_quartiles": [vs_first["q1"], vs_first["q3"]],
                        "overhead_pct_vs_sdk_first_use_halves": vs_first["halves"],
                        "stable_vs_sdk_first_use": vs_first["stable"],
                        "overhead_pct_vs_sdk_first_use_of_medians": round((med / first_use - 1) * 100, 1),
                        "met_vs_sdk_first_use": vs_first["median"] <= TARGET_PCT,
                        "cpu_overhead_pct_vs_sdk_first_use": vs_first_cpu["median"],
                        "cpu_overhead_pct_vs_sdk_first_use_halves": vs_first_cpu["halves"],
                        "cpu_overhead_pct_vs_sdk_first_use_quartiles": [vs_first_cpu["q1"], vs_first_cpu["q3"]],
                        "cpu_stable_vs_sdk_first_use": vs_first_cpu["stable"],
                        "cpu_met_vs_sdk_first_use": vs_first_cpu["median"] <= TARGET_PCT})
        functions[name] = row
    measured = max((len(v) for v in got.values()), default=0)
    return {"rounds": measured, "rounds_planned": [rounds, max_rounds], "not_stable": unstable(got),
            "repeats_imports": repeats, "imports_s": imports,
            "floor_trivial_function_s": round(floor, 3),
            "floor_cpu_s": round(statistics.median(cpu["hello"]), 3),
            "baseline_rounds_s": {b.target: [round(x, 3) for x in wall[b.target]] for b in BASELINES},
            "baseline_rounds_cpu_s": {b.target: [round(x, 3) for x in cpu[b.target]] for b in BASELINES},
            "sdk_first_use_function_s": round(first_use, 3) if first_use is not None else None,
            "sdk_first_use_cpu_s": round(statistics.median(cpu["first_use"]), 3) if cpu["first_use"] else None,
            "sdk_first_use_error": errors.get("first_use"),
            "sdk_first_read_function_s": round(statistics.median(first_read), 3) if first_read else None,
            "sdk_first_read_cpu_s": round(statistics.median(cpu["first_read"]), 3) if cpu["first_read"] else None,
            "sdk_first_read_error": errors.get("first_read"),
            "first_read_with_pydantic_cpu_s": round(statistics.median(with_pydantic), 3) if with_pydantic else None,
            "first_read_with_pydantic_error": errors.get("first_read_pydantic"),
            "main_py_import_after_functions_framework_s": own,
            "config": "STATE_BACKEND=firestore (emulator), GEMINI_API_KEY (fake server), DISPATCHER=pubsub",
            "how": "overheads are medians over rounds of the per-round ratio to the baseline started in the same "
                   "round (quartiles beside; halves: the same median over the even and the odd rounds, stable "
                   f"when within {STABLE_POINTS:g} points); seconds are medians; cpu_s: user+system CPU of the "
                   "function's processes until the first response (steady under load; waits on the store or model "
                   "cost none)",
            "load_average": [round(x, 2) for x in os.getloadavg()],
            "functions": functions}


def targets(cold: dict[str, Any]) -> dict[str, Any]:
    """``targets`` entries: run/stream/goals vs the SDKs' first use, approve/resume/runs vs their imports."""
    fns = cold["functions"]
    return {
        "cold_start_vs_sdk_first_use_pct": {
            fn: {"value": fns[fn].get("overhead_pct_vs_sdk_first_use"),
                 "quartiles": fns[fn].get("overhead_pct_vs_sdk_first_use_quartiles"), "target": TARGET_PCT,
                 "met": fns[fn].get("met_vs_sdk_first_use"),
                 "halves": fns[fn].get("overhead_pct_vs_sdk_first_use_halves"),
                 "stable": fns[fn].get("stable_vs_sdk_first_use"),
                 "cpu_value": fns[fn].get("cpu_overhead_pct_vs_sdk_first_use"),
                 "cpu_halves": fns[fn].get("cpu_overhead_pct_vs_sdk_first_use_halves"),
                 "cpu_stable": fns[fn].get("cpu_stable_vs_sdk_first_use"),
                 "cpu_met": fns[fn].get("cpu_met_vs_sdk_first_use")} for fn in VS_FIRST_USE},
        "cold_start_vs_imports_pct": {
            fn: {"value": fns[fn].get("overhead_pct_vs_first_read_with_pydantic"),
                 "quartiles": fns[fn].get("overhead_pct_vs_first_read_with_pydantic_quartiles"),
                 "target": TARGET_PCT,
                 "met": fns[fn].get("met_vs_first_read_with_pydantic"),
                 "halves": fns[fn].get("overhead_pct_vs_first_read_with_pydantic_halves"),
                 "stable": fns[fn].get("stable_vs_first_read_with_pydantic"),
                 "cpu_value": fns[fn].get("cpu_overhead_pct_vs_first_read_with_pydantic"),
                 "cpu_halves": fns[fn].get("cpu_overhead_pct_vs_first_read_with_pydantic_halves"),
                 "cpu_stable": fns[fn].get("cpu_stable_vs_first_read_with_pydantic"),
                 "cpu_met": fns[fn].get("cpu_met_vs_first_read_with_pydantic"),
                 "baseline": "bench/sdk_first_read_pydantic_fn.py (floor + Firestore and pydantic imported + "
                             "client + one read validated into a model, paired): the imports these functions "
                             "need, pydantic being the contracts' library",
                 "vs_sdk_first_read_alone": fns[fn].get("overhead_pct_vs_sdk_first_read"),
                 "cpu_vs_sdk_first_read_alone": fns[fn].get("cpu_overhead_pct_vs_sdk_first_read"),
                 "met_vs_sdk_first_read_alone": fns[fn].get("met_vs_sdk_first_read"),
                 "cpu_met_vs_sdk_first_read_alone": fns[fn].get("cpu_met_vs_sdk_first_read"),
                 "vs_joint_imports": fns[fn].get("overhead_pct_vs_joint_imports"),
                 "vs_joint_imports_halves": fns[fn].get("overhead_pct_vs_joint_imports_halves")}
            for fn in VS_IMPORTS},
    }


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.coldstart``: the ``cold_start`` section alone, with its targets (JSON on stdout)."""
    from bench.emulator import firestore_emulator
    from bench.run import cold_start_figures

    p = argparse.ArgumentParser(prog="python -m bench.coldstart", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help=f"{QUICK_ROUNDS} rounds, no more (a smoke run)")
    p.add_argument("--rounds", type=int, default=0,
                   help=f"rounds at least (default {ROUNDS}; env BENCH_COLD_ROUNDS)")
    p.add_argument("--max-rounds", type=int, default=0,
                   help=f"rounds at most, two more at a time while a figure is not stable (default {MAX_ROUNDS}; "
                        "env BENCH_COLD_MAX_ROUNDS)")
    args = p.parse_args(argv)
    with firestore_emulator() as fs_host:
        cold = cold_start_figures(fs_host, args.quick, args.rounds, args.max_rounds)
    print(json.dumps({"cold_start": cold, "targets": targets(cold)}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
