"""The sandbox service's figures for ``make bench`` (JSON section ``sandbox``).

- ``container_exec`` of ``true``: the HTTP round trip to the service (bubblewrap start, the jail,
  the change check) and the same through ``shared.workspaces`` as the tool does it (plus its
  store read and ``lastUsedAt`` write, SQLite), p50/p99 over N calls; target p50 <= 30 ms;
- a 2,000-file, ~10 MB workspace: the snapshot after a change (pack + write, server side) and the
  restore by a new process on an empty disk (the first read), to a local directory and to Cloud
  Storage through ``gcp-storage-emulator`` and the official client.

``python -m bench.sandbox [--quick]`` prints the section alone.
"""

from __future__ import annotations

import argparse
import json
import secrets
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from shared.state.sqlite_docstore import SqliteDocStore
from tests.agent.conftest import make_settings
from tests.sandbox.support import SandboxProcess, StorageEmulator

EXEC_P50_TARGET_MS = 30.0
FILES = 2000
FILE_BYTES = 5000
# 2,000 files of ~5,000 bytes (~10 MB) in 40 folders. ``random``: base64 text of random bytes (the
# costly end: gzip gains little and spends the most); ``source``: Python-like lines with varying
# names and numbers (compresses like real code).
_RANDOM = f"""
import base64, os
for i in range({FILES}):
    d = "src/pkg%02d" % (i % 40)
    os.makedirs(d, exist_ok=True)
    open("%s/m%04d.py" % (d, i), "w").write(base64.b64encode(os.urandom({FILE_BYTES * 3 // 4})).decode())
"""
_SOURCE = f"""
import os, random
r = random.Random(7)
line = "def handle_%d(value_%d, limit=%d):\\n    return value_%d * %d if value_%d < limit else None\\n\\n"
for i in range({FILES}):
    d = "src/pkg%02d" % (i % 40)
    os.makedirs(d, exist_ok=True)
    text = ""
    while len(text) < {FILE_BYTES}:
        n = r.randrange(10**6)
        text += line % (n, n, r.randrange(999), n, r.randrange(99), n)
    open("%s/m%04d.py" % (d, i), "w").write(text)
"""
TREES = {name: f"python3 - <<'PY'\n{code}\nPY\n" for name, code in (("random", _RANDOM), ("source", _SOURCE))}


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)


def exec_figures(box: SandboxProcess, tmp: Path, n: int) -> dict[str, Any]:
    from shared.workspaces import Workspaces

    client = box.client()
    wid = "ws_" + secrets.token_hex(10)
    client.create(wid)
    for _ in range(5):
        client.exec(wid, "true", timeout_s=10)
    raw: list[float] = []
    for _ in range(n):
        t = time.perf_counter()
        done = client.exec(wid, "true", timeout_s=10)
        raw.append((time.perf_counter() - t) * 1000)
        assert done.exit_code == 0 and not done.changed
    store = SqliteDocStore(str(tmp / "bench-sandbox.sqlite3"))
    service = Workspaces(store, make_settings(sandbox_url=box.url, sandbox_key=box.key), client=client)
    tool_wid = "ws_" + secrets.token_hex(10)
    service.create("bench", tool_wid, run_id=None)
    via: list[float] = []
    for _ in range(n):
        t = time.perf_counter()
        service.exec("bench", tool_wid, "true", timeout_s=10)
        via.append((time.perf_counter() - t) * 1000)
    store.close()
    p50 = statistics.median(raw)
    return {"calls": n, "service_round_trip_p50_ms": round(p50, 2), "service_round_trip_p99_ms": _pct(raw, 0.99),
            "tool_path_p50_ms": round(statistics.median(via), 2), "tool_path_p99_ms": _pct(via, 0.99),
            "target_p50_ms": EXEC_P50_TARGET_MS, "met": p50 <= EXEC_P50_TARGET_MS,
            "what": "exec of `true` in a warm workspace: HTTP to the service, bwrap with every namespace unshared, "
                    "the change check (no snapshot: nothing changed); tool_path adds the store read and write"}


def snapshot_figures(tmp: Path, label: str, where: dict[str, Any], repeats: int,
                     tree: str = "random") -> dict[str, Any]:
    box = SandboxProcess.start(tmp / f"snap-{label}", **where)
    wid = "ws_" + secrets.token_hex(10)
    snaps: list[float] = []
    try:
        client = box.client()
        client.create(wid)
        made = client.exec(wid, TREES[tree], timeout_s=120)
        assert made.exit_code == 0, made
        size = made.snapshot_bytes
        for i in range(repeats):
            snaps.append(float(client.exec(wid, f"echo {i} > touched", timeout_s=30).snapshot_ms))
        used = client.info(wid)["diskBytes"]
    finally:
        box.stop()
    restores: list[float] = []
    for _ in range(repeats):
        fresh = SandboxProcess.start(tmp / f"restore-{label}", **where)
        try:
            client = fresh.client()
            t = time.perf_counter()
            client.read_file(wid, "touched")
            first = (time.perf_counter() - t) * 1000
            t = time.perf_counter()
            client.read_file(wid, "touched")
            warm = (time.perf_counter() - t) * 1000
            restores.append(first - warm)
        finally:
            fresh.stop()
    return {"tree": tree, "files": FILES, "workspace_bytes": used, "archive_bytes": size, "repeats": repeats,
            "snapshot_ms_median": round(statistics.median(snaps), 1), "snapshot_ms_max": round(max(snaps), 1),
            "restore_ms_median": round(statistics.median(restores), 1), "restore_ms_max": round(max(restores), 1),
            "what": "snapshot: pack (tar, gzip level 1) and write after a change, measured by the service; restore: "
                    "a new process on an empty disk, first read minus a warm read"}


def figures(quick: bool = False) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="bench-sandbox-"))
    box = SandboxProcess.start(tmp / "exec", snapshot_dir=tmp / "exec-snapshots")
    try:
        execs = exec_figures(box, tmp, 50 if quick else 300)
    finally:
        box.stop()
    repeats = 2 if quick else 5
    local = snapshot_figures(tmp, "local", {"snapshot_dir": tmp / "snapshots"}, repeats)
    source = snapshot_figures(tmp, "local-source", {"snapshot_dir": tmp / "snapshots"}, repeats, tree="source")
    emulator = StorageEmulator.start(tmp)
    try:
        gcs = snapshot_figures(tmp, "gcs", {"env": emulator.env()}, repeats)
    finally:
        emulator.stop()
    return {"container_exec_true": execs, "snapshot_2000_files": {"local_dir": local, "local_dir_source_like": source,
                                                                  "cloud_storage_emulator": gcs}}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true")
    args = p.parse_args(argv)
    print(json.dumps({"sandbox": figures(args.quick)}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
