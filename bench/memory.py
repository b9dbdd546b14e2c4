"""Resident memory of a warm instance, and its peak while serving 20 concurrent streaming runs."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import urllib.request
from typing import Any

from bench.procinfo import rss_mib

CONCURRENT = 20


def warm_instance(env: dict[str, str]) -> dict[str, Any]:
    """A fresh process imports main.py, creates the runtime and serves one run (probe ``warm``)."""
    out = subprocess.run([sys.executable, "-m", "bench.probe", "warm"], env=env, capture_output=True,
                         text=True, timeout=120, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"warm probe failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _stream(port: int, i: int, results: list[dict[str, Any]]) -> None:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/api/agent/run/stream", method="POST",
                                 data=json.dumps({"prompt": f"what do I drink? ({i})"}).encode(),
                                 headers={"Authorization": f"Bearer dev:user{i}",
                                          "Content-Type": "application/json"})
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=120) as resp:
        lines = [json.loads(line) for line in resp.read().decode().splitlines() if line.strip()]
    results.append({"i": i, "status": resp.status, "events": len(lines),
                    "final": lines[-1].get("result", {}).get("status") if lines else None,
                    "seconds": time.perf_counter() - t0})


def concurrent_streams(env: dict[str, str], n: int = CONCURRENT) -> dict[str, Any]:
    """A real threaded HTTP server (devserver.create_app()) in a fresh process; ``n`` clients stream
    at once from this process. Reports the server's RSS before, its peak (VmHWM) and after."""
    proc = subprocess.Popen([sys.executable, "-m", "bench.probe", "serve"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        port = int(json.loads(proc.stdout.readline())["port"])
        # The server logs each request (JSON lines) on stdout and stderr: drained, or a full pipe
        # blocks it mid-request (20 streams write more than a pipe's 64 KB).
        for pipe in (proc.stdout, proc.stderr):
            threading.Thread(target=pipe.read, daemon=True).start()  # type: ignore[union-attr]
        warmup: list[dict[str, Any]] = []
        _stream(port, 999, warmup)  # one run first: the instance is warm, as in production
        before = rss_mib(proc.pid)
        results: list[dict[str, Any]] = []
        threads = [threading.Thread(target=_stream, args=(port, i, results)) for i in range(n)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        sampled = 0.0
        while any(t.is_alive() for t in threads):
            sampled = max(sampled, rss_mib(proc.pid)["VmRSS"])
            time.sleep(0.01)
        for t in threads:
            t.join()
        wall = time.perf_counter() - t0
        after = rss_mib(proc.pid)
        completed = sum(1 for r in results if r["final"] == "completed")
        return {"runs": n, "completed": completed, "wall_s": round(wall, 3),
                "max_run_s": round(max(r["seconds"] for r in results), 3) if results else None,
                "warm_VmRSS_mib": before["VmRSS"], "peak_VmRSS_sampled_mib": sampled,
                "peak_VmHWM_mib": after["VmHWM"], "after_VmRSS_mib": after["VmRSS"]}
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
