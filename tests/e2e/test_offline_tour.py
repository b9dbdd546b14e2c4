"""The first hour, scripted: ``make dev``'s app (devserver.py, a real process on a free port) with no
Gemini key and ``DEV_FAKES=1``, driven over HTTP as a new user would. The offline model calls the
pinned ``mcp-server-time`` MCP server, reads an issue on the fake GitHub, opens one after an
approval, makes and runs a plan with ``agent_create_plan``, and drafts a plan session whose task
titles and acts are readable (each act's arguments come from its own task)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shared.models.offline import LABEL

ROOT = Path(__file__).resolve().parents[2]
USER = "tour-user"
HEADERS = {"Authorization": f"Bearer dev:{USER}", "Content-Type": "application/json"}
WAIT_S = 60


class Dev:
    def __init__(self, base: str, banner: str) -> None:
        self.base = base
        self.banner = banner

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method, headers=HEADERS)
        try:
            with urllib.request.urlopen(req, timeout=WAIT_S) as resp:
                raw, status, kind = resp.read(), resp.status, resp.headers.get("Content-Type", "")
        except urllib.error.HTTPError as err:
            raw, status, kind = err.read(), err.code, err.headers.get("Content-Type", "")
        if "ndjson" in kind:
            return status, [json.loads(line) for line in raw.decode().splitlines() if line.strip()]
        return status, json.loads(raw)

    def ok(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        status, got = self.call(method, path, body)
        assert status < 300, (status, got)
        return got

    def until(self, path: str, done: Any) -> dict[str, Any]:
        deadline = time.monotonic() + WAIT_S
        got: dict[str, Any] = {}
        while time.monotonic() < deadline:
            got = self.ok("GET", path)
            if done(got):
                return got
            time.sleep(0.1)
        raise AssertionError(f"{path} did not get there in {WAIT_S} s: {json.dumps(got)[:2000]}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dev]:
    tmp = tmp_path_factory.mktemp("tour")
    # What `make dev` runs (Makefile: PORT and MCP_ALLOW_PRIVATE_URLS), plus the fakes' switch.
    with serve(tmp, {**offline_env(), "MCP_ALLOW_PRIVATE_URLS": "true", "DEV_FAKES": "1"}) as (base, log):
        yield Dev(base, log.read_text())


def offline_env() -> dict[str, str]:
    """This process's environment without a model key, connector settings or deployment switches:
    ``make dev`` as a new user starts it (offline model, SQLite, local auth, inline dispatcher)."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("GEMINI_", "MCP_", "GITHUB_", "SLACK_", "GMAIL_", "CALENDAR_", "GOOGLE_"))
            and k not in ("K_SERVICE", "STATE_BACKEND", "AUTH_MODE", "DISPATCHER", "CREDENTIALS_ENCRYPTION_KEY",
                          "DEV_FAKES")}


@contextlib.contextmanager
def serve(tmp: Path, env: dict[str, str]) -> Iterator[tuple[str, Path]]:
    """``devserver.py`` in ``tmp`` (SQLite there) on a free port; yields its base URL and log once
    ``/healthz`` answers."""
    port = free_port()
    env = {**env, "PORT": str(port), "PYTHONUNBUFFERED": "1", "SQLITE_PATH": str(tmp / "dev.sqlite3")}
    log = (tmp / "devserver.log").open("w+")
    # cwd is the temp dir: its var/ holds the generated encryption key, not the checkout's.
    proc = subprocess.Popen([sys.executable, str(ROOT / "devserver.py")], cwd=tmp, env=env, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + WAIT_S
        while True:
            try:
                with urllib.request.urlopen(base + "/healthz", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, Path(log.name).read_text()[-3000:]
            time.sleep(0.1)
        yield base, Path(log.name)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(10)
        log.close()


def run(dev: Dev, prompt: str, **extra: Any) -> dict[str, Any]:
    got: dict[str, Any] = dev.ok("POST", "/api/agent/run", {"prompt": prompt, **extra})
    return got


def test_the_server_says_it_is_offline_and_where_the_fakes_are(dev: Dev) -> None:
    assert "model: offline model" in dev.banner
    assert "Dev fakes (DEV_FAKES=1): GitHub http://127.0.0.1:" in dev.banner
    assert "MCP server time: on" in dev.banner


def test_an_mcp_tool_call_on_the_pinned_time_server(dev: Dev) -> None:
    body = run(dev, "What time is it in Tokyo?")
    assert body["status"] == "completed", body
    assert body["tool"] == "time_get_current_time" and body["toolArgs"] == {"timezone": "Asia/Tokyo"}
    text = body["output"]["text"]
    assert text.startswith(LABEL) and text.count(LABEL) == 1 and "Asia/Tokyo" in text


def test_a_github_read_against_the_fake_github(dev: Dev) -> None:
    dev.ok("POST", "/api/integrations/github", {"accessToken": "ghp_fakeGitHubToken0123456789"})
    body = run(dev, "Read issue #1 on octo/hello")
    assert body["status"] == "completed" and body["tool"] == "github_issue_get", body
    assert body["toolArgs"] == {"repo": "octo/hello", "number": 1}
    assert "The README link is broken" in body["output"]["text"]


def test_a_side_effect_waits_for_approval_then_happens_once(dev: Dev) -> None:
    dev.ok("POST", "/api/integrations/github", {"accessToken": "ghp_fakeGitHubToken0123456789"})
    body = run(dev, 'Open an issue on octo/hello titled "Tour issue" saying opened during the tour')
    assert body["status"] == "awaiting_confirmation", body
    assert body["tool"] == "github_issue_create"
    assert body["toolArgs"] == {"repo": "octo/hello", "title": "Tour issue", "body": "opened during the tour"}
    dev.ok("POST", "/api/agent/approve", {"approvalId": body["approval"]["approvalId"], "decision": "approve"})
    done = dev.until(f"/api/agent/runs/{body['runId']}", lambda r: r["status"] in ("completed", "failed"))
    assert done["status"] == "completed", done
    listed = run(dev, "List the open issues of octo/hello")
    assert listed["tool"] == "github_issues_list" and "Tour issue" in listed["output"]["text"], listed


def test_agent_create_plan_runs_its_plan_and_answers(dev: Dev) -> None:
    _, events = dev.call("POST", "/api/agent/run/stream",
                         {"prompt": "Make a plan to check the time in Tokyo, then read issue #1 on octo/hello"})
    kinds = [e["type"] for e in events]
    assert "plan_created" in kinds, kinds
    created = next(e for e in events if e["type"] == "plan_created")
    assert [t["title"] for t in created["plan"]["tasks"]] == ["Check the time in Tokyo", "Read issue #1 on octo/hello"]
    result = events[-1]
    run_id = result["result"]["runId"] if result["type"] == "result" else result["runId"]
    final = dev.until(f"/api/agent/runs/{run_id}", lambda r: r["status"] in ("completed", "failed"))
    assert final["status"] == "completed", final
    _, log = dev.call("GET", f"/api/agent/runs/{run_id}/events?after=0")
    answer = "".join(e["delta"] for e in log if e["type"] == "delta")
    assert "The plan ses_" in answer and "is completed" in answer, answer
    assert answer.count(LABEL) == 1, json.dumps([e for e in log if e["type"] == "delta"])
    session = dev.ok("GET", f"/api/agent/sessions/{created['planId']}")
    acts = [h["action"] for t in session["plan"]["tasks"] for h in t["history"] if h["action"]["tool"] != "task_done"]
    assert [(a["tool"], a["args"]) for a in acts] == [("time_get_current_time", {"timezone": "Asia/Tokyo"}),
                                                      ("github_issue_get", {"repo": "octo/hello", "number": 1})]


FRAGMENT = re.compile(r"Task \d+ of \d+|\(t\d+\)|Remember:|Understand:|Do:|Follow up:|offline model|\n")


def test_a_plan_session_has_readable_tasks_whose_acts_come_from_them(dev: Dev) -> None:
    prompt = ("Check the time in Tokyo, then list the open issues of octo/hello, "
              "and remember that the issues were reviewed")
    created = dev.ok("POST", "/api/agent/sessions", {"prompt": prompt})
    tasks = created["plan"]["tasks"]
    titles = [t["title"] for t in tasks]
    assert titles == ["Check the time in Tokyo", "List the open issues of octo/hello",
                      "Remember that the issues were reviewed"]
    for t in tasks:  # readable: a short sentence of the prompt, no concatenated fragments
        assert not FRAGMENT.search(t["title"]) and not FRAGMENT.search(t["description"]), t
        assert t["title"][0].isupper() and len(t["title"]) <= 80 and t["title"].lower() in prompt.lower()
    sid = created["sessionId"]
    refined = dev.ok("POST", f"/api/agent/sessions/{sid}/refine", {"message": "also read issue #1 on octo/hello"})
    assert [t["title"] for t in refined["plan"]["tasks"]][-1] == "Read issue #1 on octo/hello"
    dev.ok("POST", f"/api/agent/sessions/{sid}/confirm", {"planVersion": refined["plan"]["version"]})
    # The memory is a side effect: it waits in the approvals inbox.
    pending = dev.until("/api/agent/approvals", lambda a: any(x.get("sessionId") == sid for x in a["approvals"]))
    approval = next(x for x in pending["approvals"] if x.get("sessionId") == sid)
    assert approval["tool"] == "save_memory"
    dev.ok("POST", "/api/agent/approve", {"approvalId": approval["approvalId"], "decision": "approve"})
    view = dev.until(f"/api/agent/sessions/{sid}", lambda s: s["status"] not in ("executing", "awaiting_approval"))
    assert view["status"] == "completed", view
    acts = {t["title"]: [h for h in t["history"] if h["action"]["tool"] != "task_done"] for t in view["plan"]["tasks"]}
    expected = {"Check the time in Tokyo": ("time_get_current_time", {"timezone": "Asia/Tokyo"}),
                "List the open issues of octo/hello": ("github_issues_list", {"repo": "octo/hello", "state": "open"}),
                "Remember that the issues were reviewed": ("save_memory", {"text": "the issues were reviewed"}),
                "Read issue #1 on octo/hello": ("github_issue_get", {"repo": "octo/hello", "number": 1})}
    for title, (tool, args) in expected.items():
        (act,) = acts[title]  # one act per task, from its own words
        assert (act["action"]["tool"], act["action"]["args"]) == (tool, args), (title, act)
        assert act["reason"].endswith(f"I will call {tool}.") and "Task " not in act["reason"]
        for value in args.values():  # every argument is in its task's title
            assert str(value).lower() in title.lower() or value == "Asia/Tokyo", (title, value)
    _, events = dev.call("GET", f"/api/agent/sessions/{sid}/events?after=0")
    assert json.dumps(events).count(LABEL) == 1  # said once for the session's run
