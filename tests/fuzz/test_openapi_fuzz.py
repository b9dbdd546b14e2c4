"""Fuzzing in CI (issue 14, scope 2): the dev server conforms to its own OpenAPI document.

``tests/fuzz/fuzzer.py`` serves the dev app (every function on one port, as ``make dev``) on a real
socket and runs schemathesis' coverage, fuzzing and stateful phases against ``/openapi.json`` with
every check on. It runs in a fresh interpreter with a fixed ``PYTHONHASHSEED``: with a fixed seed and
derandomized generation the requests are then the same on every run, whatever ran before in this
process. Bounded by example counts (about 40 s), not by time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.fuzz.fuzzer import SEED

ROOT = Path(__file__).resolve().parents[2]


def run_fuzzer(seed: int | None = None) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-m", "tests.fuzz.fuzzer", *([] if seed is None else ["--seed", str(seed)])],
                          cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONHASHSEED": "0"}, timeout=900, check=False)
    assert proc.returncode == 0, proc.stderr[-5000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def assert_clean(outcome: dict[str, Any]) -> None:
    assert not outcome["errors"], "\n\n".join(outcome["errors"])
    unique = {(f["operation"], f["check"], f["title"], f["status"]): f["text"] for f in outcome["findings"]}
    assert not unique, f"{len(unique)} distinct failures:\n\n" + "\n\n".join(unique.values())
    assert outcome["stop_reason"] == "completed", outcome["stop_reason"]


# Stateful chains must reach the ids-dependent routes with real ids, not only 404s.
WANTED_CHAINS = [("GET /api/agent/runs/{runId}", 200),
                 ("GET /api/agent/runs/{runId}/events", 200), ("GET /api/integrations/{provider}", 200),
                 ("DELETE /api/integrations/{provider}", 200), ("GET /api/agent/sessions/{sessionId}", 200),
                 ("POST /api/agent/sessions/{sessionId}/refine", 200),
                 ("POST /api/agent/sessions/{sessionId}/confirm", 202),
                 ("POST /api/agent/sessions/{sessionId}/cancel", 202),
                 ("GET /api/agent/sessions/{sessionId}/events", 200)]
NDJSON_ROUTES = ("POST /api/agent/run/stream", "GET /api/agent/runs/{runId}/events",
                 "GET /api/agent/sessions/{sessionId}/events")
MORE_SEEDS = 2
"""Which chains one seed's walk explores follows the document and the answers (background work
races the chain: a session may be cancelled or confirmed before the walk gets there), so a chain a
seed reached on one machine can be missed on another. A missed chain (or NDJSON route) is looked for with up to this
many further seeds, each run checked as strictly as the first; the union must reach every chain."""


def test_the_dev_server_conforms_to_its_own_openapi_document() -> None:
    outcome = run_fuzzer()
    assert_clean(outcome)
    stateful = list(outcome["stateful"])
    reached = {(op, status) for op, status, _ in stateful}
    ndjson = {route for route, n in outcome["ndjson"].items() if n}
    statuses = list(outcome["statuses"])
    for extra in range(1, MORE_SEEDS + 1):
        if set(WANTED_CHAINS) <= reached and set(NDJSON_ROUTES) <= ndjson:
            break
        more = run_fuzzer(seed=SEED + extra)
        assert_clean(more)
        stateful += more["stateful"]
        reached |= {(op, status) for op, status, _ in more["stateful"]}
        ndjson |= {route for route, n in more["ndjson"].items() if n}
        statuses += more["statuses"]
    shown = "\n".join(f"{op} {status}: {n}" for op, status, n in stateful)
    # approve with a real id: 202, or 409 when the approval was already decided or closed by the time
    # the chain got there (background resumes and cancels race the chain); a made-up id is a 404.
    assert {("POST /api/agent/approve", 202), ("POST /api/agent/approve", 409)} & reached, shown
    for wanted in WANTED_CHAINS:
        assert wanted in reached, (wanted, shown)
    # NDJSON bodies went through the deserializer (and so were validated line by line).
    for ndjson_route in NDJSON_ROUTES:
        assert ndjson_route in ndjson, (ndjson_route, ndjson)
    # No answer was a server error, whatever it was asked (not_a_server_error is among the checks;
    # this names the statuses if it ever passes by mistake).
    assert not [s for s in statuses if s[1] >= 500], statuses
