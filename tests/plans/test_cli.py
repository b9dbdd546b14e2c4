"""``agent plan``: the installed command against a served dev app (real HTTP, a scripted model, the
inline dispatcher): plan table, a refinement, confirmation, live progress, an approval answered
inline, the final log."""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from shared.auth import LocalAuthenticator
from shared.runtime import Runtime
from shared.state.docstore import DocStore
from tests import serving
from tests.agent.conftest import make_settings
from tests.emulators import free_port
from tests.plans.support import Script, model

REPO = Path(__file__).resolve().parents[2]
AGENT = REPO / ".venv" / "bin" / "agent"


@pytest.fixture
def served(sqlite_docstore: DocStore) -> Iterator[tuple[str, Runtime]]:
    script = Script(acts={"Write the summary": [("save_memory", {"text": "the summary"})]},
                    refine=lambda p: {"tasks": [*p["currentPlan"], {"id": None, "title": "Tell the team"}],
                                      "summary": "one more"})
    rt = Runtime(make_settings(dispatcher="inline"), store=sqlite_docstore, model=model(script),
                 authenticator=LocalAuthenticator())
    with serving.served(rt=rt) as url:
        yield url, rt


def test_agent_plan_refines_confirms_approves_and_prints_the_log(served: tuple[str, Runtime]) -> None:
    url, rt = served
    answers = "add a step to tell the team\ny\ny\n"  # refine, confirm, approve the save_memory act
    done = subprocess.run([str(AGENT), "plan", "Summarise my notes", "--deadline", "2h", "--server", url,
                           "--token", "dev:alice"], input=answers, capture_output=True, text=True, timeout=120,
                          cwd="/", check=False)
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert "Plan v1:" in out and "Plan v2:" in out and "Tell the team" in out
    assert "[task 1 of 4] Read the notes" in out and "[task 4 of 4] Tell the team" in out
    assert "approval needed: Remember:" in out
    assert "session completed" in out and "save_memory" in out.split("session completed", 1)[1]
    assert [m.text for m in rt.users.list_memories("alice")] == ["the summary"]


def test_agent_plan_reports_an_unreachable_server() -> None:
    done = subprocess.run([str(AGENT), "plan", "x", "--server", f"http://127.0.0.1:{free_port()}"],
                          capture_output=True, text=True, timeout=60, check=False, input="")
    assert done.returncode == 2 and "cannot reach" in done.stdout


def test_agent_plan_rejects_a_bad_deadline() -> None:
    done = subprocess.run([str(AGENT), "plan", "x", "--deadline", "soonish"], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 2 and "use a duration" in done.stderr


def agent(url: str, *args: str, answers: str) -> str:
    done = subprocess.run([str(AGENT), *args, "--server", url, "--token", "dev:alice"], input=answers,
                          capture_output=True, text=True, timeout=120, cwd="/", check=False)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    return done.stdout


def test_agent_plan_shows_changes_json_arguments_and_no_internal_tools(served: tuple[str, Runtime]) -> None:
    url, _ = served
    out = agent(url, "plan", "Summarise my notes", "--deadline", "2h",
                answers="add a step to tell the team\ny\ny\n")
    assert "changed (add): added task t4: Tell the team" in out.split("Plan v2:", 1)[0]  # what the refinement changed
    assert "why: one more" in out
    log = out.split("session completed", 1)[1]
    assert '{"text": "the summary"}' in log and "{'text'" not in log  # JSON, not Python's repr
    assert "task_done" not in out
    assert 'act: Remember: "the summary" -> ok' in out


def test_agent_plan_shows_a_rejected_act_as_rejected(served: tuple[str, Runtime]) -> None:
    url, rt = served
    out = agent(url, "plan", "Summarise my notes", "--deadline", "2h", answers="y\nn\n")
    assert 'rejected: Remember: "the summary"' in out
    assert "observed: error" not in out and "-> error" not in out
    log = out.split("session ", 2)[-1]
    assert "save_memory" in log and "rejected" in log
    assert rt.users.list_memories("alice") == []


def test_agent_approvals_lists_the_inbox_and_decides(served: tuple[str, Runtime]) -> None:
    url, rt = served
    assert "nothing is waiting for a decision" in agent(url, "approvals", answers="")
    api_session = rt.sessions  # a session paused on its save_memory act, started and confirmed over HTTP
    from agentcli.http import Api

    api = Api(url, "dev:alice")
    sid = api.call("POST", "/api/agent/sessions", {"prompt": "Summarise my notes"})["sessionId"]
    api.call("POST", f"/api/agent/sessions/{sid}/confirm", {"planVersion": 1})
    pending: list[dict[str, object]] = []
    for _ in range(600):  # the inline dispatcher executes on its own threads: poll the inbox (bounded)
        pending = api.call("GET", "/api/agent/approvals")["approvals"]
        if pending:
            break
        threading.Event().wait(0.05)
    assert len(pending) == 1 and pending[0]["sessionId"] == sid
    listed = agent(url, "approvals", "--decide", answers="y\n")
    assert f"session {sid} task t2" in listed and 'save_memory: Remember: "the summary"' in listed
    assert "approved" in listed
    for _ in range(600):
        if api_session.get(sid) is not None and api_session.get(sid)[0].status == "completed":  # type: ignore[index]
            break
        threading.Event().wait(0.05)
    assert [m.text for m in rt.users.list_memories("alice")] == ["the summary"]
    assert "approved" in agent(url, "approvals", "--status", "decided", answers="")


def test_server_and_token_come_from_the_environment_and_the_first_line_says_who(served: tuple[str, Runtime]) -> None:
    url, _ = served
    port = url.rsplit(":", 1)[1]
    base = {k: v for k, v in os.environ.items() if k not in ("AGENT_SERVER", "AGENT_TOKEN", "PORT")}
    runs = {"env": {**base, "AGENT_SERVER": url, "AGENT_TOKEN": "dev:alice"},
            "make dev's port": {**base, "PORT": port, "USER": "bob"}}
    for why, env in runs.items():
        done = subprocess.run([str(AGENT), "approvals"], env=env, capture_output=True, text=True, timeout=120,
                              cwd="/", check=False, input="")
        assert done.returncode == 0, (why, done.stdout + done.stderr)
        first = done.stdout.splitlines()[0]
        if why == "env":
            assert first == f"agent approvals: {url} (AGENT_SERVER) as user alice (AGENT_TOKEN)"
        else:
            assert first == f"agent approvals: {url} (default: make dev) as user bob (default: $USER)"
    flagged = agent(url, "approvals", answers="")
    assert flagged.splitlines()[0] == f"agent approvals: {url} (--server) as user alice (--token)"


def test_agent_plan_prints_each_plan_line_once(served: tuple[str, Runtime]) -> None:
    url, _ = served
    out = agent(url, "plan", "Summarise my notes", "--deadline", "2h", answers="add a step to tell the team\ny\ny\n")
    after = out.split("Refine it in words", 3)[-1]  # what follows the confirmation
    assert out.count("added task t4: Tell the team") == 1, out
    assert "plan v1:" not in after and "plan v2:" not in after, after
