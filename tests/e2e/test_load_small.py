"""``make load`` in small (issue 14 item 8): the real command, 3 users for a few seconds against the
dev server on the Firestore emulator, must count 0 errors and find every run settled; and its store
check must catch a broken run. No wall-clock figure is asserted (those go to docs/benchmarks.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from google.cloud import firestore

from bench.load import REPO, check_runs, percentiles
from shared.config import Settings
from shared.runtime import Runtime
from shared.state import paths
from shared.state.docstore import Query
from shared.state.firestore_docstore import FirestoreDocStore
from tests.emulators import Emulator

pytestmark = pytest.mark.firestore


@pytest.fixture(scope="module")
def load(firestore_emulator: Emulator, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("load") / "load.json"
    env = {**os.environ, "FIRESTORE_EMULATOR_HOST": firestore_emulator.host}
    done = subprocess.run([sys.executable, "-m", "bench.load", "--users", "3", "--duration-s", "3",
                           "--model-latency-s", "0.1", "--reject-every", "2", "--out", str(out)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, f"make load failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    printed = json.loads(done.stdout)
    assert json.loads(out.read_text()) == printed
    return printed  # type: ignore[no-any-return]


@pytest.fixture
def store(load: dict[str, Any], firestore_emulator: Emulator) -> Iterator[FirestoreDocStore]:
    docstore = FirestoreDocStore(firestore.Client(project=load["project"]), owns_client=True)
    yield docstore
    docstore.close()


def test_small_load_has_no_errors_and_every_run_settled(load: dict[str, Any]) -> None:
    assert load["ok"] is True
    assert load["errors"] == {"total": 0, "by_kind": {}, "samples": []}
    runs = load["runs"]
    assert runs["started"] == runs["completed"] >= 3
    assert runs["approved"] > 0 and runs["rejected"] > 0
    assert runs["approved"] + runs["rejected"] == runs["completed"]
    # Three requests per run (stream, approve, follow), the unmeasured warm-up run included.
    assert load["requests"] == 3 * (runs["completed"] + 1)
    assert set(load["requests_by_route"].values()) == {runs["completed"] + 1}
    assert load["invariant"]["ok"] is True and load["invariant"]["violations"] == []
    assert load["invariant"]["runs_checked"] == runs["completed"] + 1
    assert load["invariant"]["statuses"] == {"completed": runs["completed"] + 1}
    for leg in ("start_to_pause", "approve_to_done", "per_run"):
        assert load["added_latency_ms"][leg]["n"] == runs["completed"]
        assert load["added_latency_ms"][leg]["p50"] <= load["added_latency_ms"][leg]["p99"]
    assert load["added_latency_ms"]["server_approve_to_done"]["n"] == runs["completed"]


def test_store_check_catches_missing_events_missing_side_effects_and_unsettled_runs(
        load: dict[str, Any], store: FirestoreDocStore) -> None:
    rt = Runtime(Settings(), store=store)
    assert check_runs(rt, {}, latency_s=0.1)["ok"] is True

    runs = [r for n in (1, 2, 3) for r in rt.runs.list_runs_for(f"load-u{n}", 50)]
    lost = next(r for r in runs if r.result is not None and r.result.output and "toolResult" in r.result.output)
    gap, unsettled = [r for r in runs if r.run_id != lost.run_id][:2]
    client = store.client  # the test edits documents behind the runtime's back
    # The document holding event 2: alone, or shared with the other events of its commit and named
    # by the last one's seq (docs/firestore-layout.md).
    holder = next(d for d in store.query(Query(paths.events(gap.run_id))) if int(d.id) >= 2)
    client.document(f"runs/{gap.run_id}/events/{holder.id}").delete()
    left = [e["seq"] for e in rt.runs.list_events(gap.run_id)]
    assert left[0] == 1 and 2 not in left
    action = next(a for a in rt.runs.list_actions(lost.run_id) if a.tool == "save_memory")
    client.document(f"users/{lost.uid}/memories/m-{action.action_id}").delete()
    client.document(f"runs/{unsettled.run_id}").update({"status": "planning"})

    report = check_runs(rt, {"run_never_stored": ("load-u1", "completed")}, latency_s=0.1)
    text = "\n".join(report["violations"])
    assert report["ok"] is False
    assert f"{gap.run_id}: events {left} are not 1..{gap.last_seq}" in text
    assert f"{lost.run_id}: approved action {action.action_id} never executed" in text
    assert f"{unsettled.run_id}: neither terminal nor paused for a pending approval: planning" in text
    assert "run_never_stored: the client saw it, the store has no such run" in text


def test_percentiles_are_nearest_rank_in_milliseconds() -> None:
    assert percentiles([]) == {"n": 0, "p50": None, "p99": None, "max": None}
    assert percentiles([i / 1000 for i in range(100, 0, -1)]) == {"n": 100, "p50": 50.0, "p99": 99.0, "max": 100.0}
    assert percentiles([0.002]) == {"n": 1, "p50": 2.0, "p99": 2.0, "max": 2.0}


def test_load_refuses_bad_options(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "bench.load", "--users", "0", "--out", str(tmp_path / "x.json")],
                          cwd=REPO, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2 and "--users must be >= 1" in done.stderr
    assert not (tmp_path / "x.json").exists()
