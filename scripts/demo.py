"""`make demo`: a guided tour of the HTTP API against a fresh local dev server.

Starts devserver.py on a free port with a throw-away SQLite file (offline model unless
GEMINI_API_KEY is set), then: streams a run whose save_memory call stops for approval,
approves it, follows the resumed run's events, and asks a follow-up on the same thread.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from typing import Any

UID = "demo-user"
HEADERS = {"Authorization": f"Bearer dev:{UID}", "Content-Type": "application/json"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def request(base: str, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, bytes]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method, headers=HEADERS)
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def show_events(raw: bytes) -> list[dict[str, Any]]:
    events = [json.loads(line) for line in raw.decode().splitlines() if line.strip()]
    for ev in events:
        print("   ", json.dumps(ev, ensure_ascii=False)[:220])
    return events


def main() -> int:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    tmp = tempfile.mkdtemp(prefix="agent-demo-")
    env = {**os.environ, "PORT": str(port), "SQLITE_PATH": os.path.join(tmp, "demo.sqlite3"),
           "STATE_BACKEND": "sqlite", "AUTH_MODE": "local", "DISPATCHER": "inline"}
    # The server's log lines go to stderr, so stdout is the tour alone; in a terminal both show, so
    # the server logs warnings and errors only (its INFO lines buried the tour) unless LOG_LEVEL says.
    env.setdefault("LOG_LEVEL", "WARNING")
    server = subprocess.Popen([sys.executable, "devserver.py"], env=env, stdout=sys.stderr)
    try:
        for _ in range(100):
            try:
                if request(base, "GET", "/healthz")[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.1)
        print(f"\n== 1. POST /api/agent/run/stream (user {UID}, supervised by default)")
        status, raw = request(base, "POST", "/api/agent/run/stream",
                              {"prompt": "Remember that I prefer window seats on trains."})
        events = show_events(raw)
        result = events[-1]["result"]
        if result["status"] != "awaiting_confirmation":
            print("   unexpected: the run did not stop for approval")
            return 1
        run_id, approval = result["runId"], result["approval"]
        print(f"\n   -> paused for approval {approval['id']}: {approval['preview']}")
        print("\n== 2. POST /api/agent/approve")
        status, raw = request(base, "POST", "/api/agent/approve",
                              {"approvalId": approval["id"], "decision": "approve"})
        print("   ", status, raw.decode())
        print(f"\n== 3. GET /api/agent/runs/{run_id}/events?after={events[-1]['seq']}&follow=1 (resumed work)")
        status, raw = request(base, "GET", f"/api/agent/runs/{run_id}/events?after={events[-1]['seq']}&follow=1")
        show_events(raw)
        print("\n== 4. POST /api/agent/run on the same thread (read-only tool, no approval)")
        status, raw = request(base, "POST", "/api/agent/run",
                              {"prompt": "What do you remember about seats?", "threadId": result["threadId"]})
        print("   ", status, json.dumps(json.loads(raw), ensure_ascii=False)[:400])
        print(f"\n== 5. GET /api/agent/runs/{run_id}")
        status, raw = request(base, "GET", f"/api/agent/runs/{run_id}")
        run = json.loads(raw)
        print(f"    status={run['status']} steps={run['steps']} usage={run['usage']}")
        return 0
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    sys.exit(main())
