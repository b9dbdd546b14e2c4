"""``.venv/bin/host-agent`` as a user runs it: a subprocess against the reference host on loopback.

Exit codes: 0 session ended normally, 2 usage, 3 protocol failure, 4 connection failure, 5 timeout.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from hostagent.alt_host.server import running
from hostagent.reference_host.faults import parse_fault
from hostagent.reference_host.server import ThreadedHost, serve_in_thread
from shared.state.sqlite_docstore import SqliteDocStore
from shared.state.usage_repo import UsageRepo
from tests.fakes.fake_gemini import FakeGemini, Received, Reply, text
from tests.hostagent.support import GOAL, check_log
from tests.hostagent.test_llm_planner import _context_of, _first_user_texts, booking_brain

REPO = Path(__file__).resolve().parents[2]
LAUNCHER = REPO / ".venv" / "bin" / "host-agent"
RUN_LIMIT_S = 60  # bounds a hung process; not a performance assertion
_MODEL_ENV = ("GEMINI_API_KEY", "GEMINI_USE_VERTEX", "GEMINI_BASE_URL", "GEMINI_MODEL", "PYTHONPATH", "LOG_LEVEL")


def host_agent(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in _MODEL_ENV}
    # From another directory: the launcher finds its checkout by itself.
    return subprocess.run([str(LAUNCHER), *args], capture_output=True, text=True, timeout=RUN_LIMIT_S,
                          cwd="/", env={**base, **(env or {})})


@pytest.fixture
def host() -> Iterator[ThreadedHost]:
    with serve_in_thread() as running:
        yield running


def _records(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_launcher_is_installed_by_make_venv() -> None:
    assert LAUNCHER.is_file() and os.access(LAUNCHER, os.X_OK)
    assert LAUNCHER.read_text() == (REPO / "scripts" / "host-agent").read_text()


def test_a_booking_session_exits_0(tmp_path: Path, host: ThreadedHost) -> None:
    log = tmp_path / "logs" / "session.jsonl"
    proc = host_agent("--url", host.url, "--room", "cli", "--goal", GOAL, "--log", str(log))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == f"goal: {GOAL}"
    stages = [line.split("]")[0].removeprefix("[stage ") for line in lines if line.startswith("[stage ")]
    assert stages == ["browse", "showtimes", "seats", "checkout", "confirmation"]
    assert any(line.startswith("agent: Booked BK-") for line in lines)
    assert lines[-1].startswith("session finished: completed")
    finish = _records(log)[-1]
    assert finish["outcome"] == "completed" and finish["data"]["exit_code"] == 0  # type: ignore[index]
    assert host.server.host_of("cli").booking.booking_id is not None
    # stderr carries the structured outcome line only at INFO or above when asked; nothing else here.
    assert proc.stderr == ""


def test_a_protocol_failure_exits_3(tmp_path: Path) -> None:
    with serve_in_thread(faults=[parse_fault("wrong_version:*:3")]) as running:  # the third one ends it
        log = tmp_path / "s.jsonl"
        proc = host_agent("--url", running.url, "--room", "r", "--goal", GOAL, "--log", str(log), "--quiet")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert proc.stdout == ""  # --quiet
    error = json.loads(proc.stderr.splitlines()[-1])
    assert error["severity"] == "ERROR" and error["message"] == "host agent session finished"
    assert error["outcome"] == "protocol_error" and error["exitCode"] == 3
    assert _records(log)[-1]["outcome"] == "protocol_error"


def test_a_host_closing_mid_call_exits_4(tmp_path: Path) -> None:
    with serve_in_thread(faults=[parse_fault("close_mid_call:select_seats")]) as running:
        log = tmp_path / "s.jsonl"
        proc = host_agent("--url", running.url, "--room", "r", "--goal", GOAL, "--log", str(log))
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "session finished: connection_lost" in proc.stdout
    assert _records(log)[-1]["outcome"] == "connection_lost"


def test_nothing_listening_exits_4(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port that was free a moment ago
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = tmp_path / "s.jsonl"
    proc = host_agent("--url", f"ws://127.0.0.1:{port}/relay", "--room", "r", "--goal", GOAL, "--log", str(log))
    assert proc.returncode == 4, proc.stdout + proc.stderr
    records = _records(log)
    assert records[-1]["outcome"] == "connection_lost" and records[-1]["code"] == "CONNECT_FAILED"


def test_a_peer_that_never_answers_the_handshake_exits_4(tmp_path: Path) -> None:
    with socket.socket() as server:  # accepts TCP, never completes the WebSocket handshake
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        log = tmp_path / "s.jsonl"
        proc = host_agent("--url", f"ws://127.0.0.1:{port}/relay", "--room", "r", "--goal", GOAL, "--log",
                          str(log), "--timeout-s", "0.3")
    assert proc.returncode == 4, proc.stdout + proc.stderr
    finish = _records(log)[-1]
    assert finish["outcome"] == "connection_lost" and finish["code"] == "CONNECT_FAILED"
    assert "did not answer within 0.3s" in str(finish["reason"])


def test_the_session_deadline_exits_5(tmp_path: Path) -> None:
    # A peer that never completes the handshake, and every single wait (30 s) longer than the whole
    # session (1 s): the session deadline is what ends it.
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        log = tmp_path / "s.jsonl"
        proc = host_agent("--url", f"ws://127.0.0.1:{port}/relay", "--room", "r", "--goal", GOAL, "--log", str(log),
                          "--timeout-s", "30", "--session-timeout-s", "1")
    assert proc.returncode == 5, proc.stdout + proc.stderr
    finish = _records(log)[-1]
    assert finish["outcome"] == "timeout" and finish["code"] == "SESSION_TIMEOUT"
    assert "session finished: timeout (the session did not finish within 1s)" in proc.stdout


@pytest.mark.parametrize(("args", "message"), [
    (["--url", "http://x/relay"], "expected ws://HOST:PORT/PATH"),
    (["--url", "ws://127.0.0.1:1/r", "--timeout-s", "0"], "must be greater than 0"),
    (["--url", "ws://127.0.0.1:1/r", "--planner", "magic"], "invalid choice: 'magic'"),
    (["--url", "ws://127.0.0.1:1/r", "--goal", "  "], "argument --goal: must not be empty"),
], ids=["not-ws", "zero-timeout", "unknown-planner", "empty-goal"])
def test_bad_usage_exits_2(tmp_path: Path, args: list[str], message: str) -> None:
    base = {"--room": "r", "--goal": GOAL, "--log": str(tmp_path / "s.jsonl")}
    for key, value in base.items():
        if key not in args:
            args = [*args, key, value]
    proc = host_agent(*args)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert not (tmp_path / "s.jsonl").exists()


def test_the_llm_planner_without_a_model_key_exits_2(tmp_path: Path) -> None:
    proc = host_agent("--url", "ws://127.0.0.1:1/r", "--room", "r", "--goal", GOAL, "--log",
                      str(tmp_path / "s.jsonl"), "--planner", "llm")
    assert proc.returncode == 2
    assert "--planner llm needs GEMINI_API_KEY (or GEMINI_USE_VERTEX=true)" in proc.stderr


def test_the_llm_planner_books_through_gemini(tmp_path: Path, host: ThreadedHost) -> None:
    goal = "Book 2 seats for Inside Out 2, name Ada Lovelace, email ada@example.com"

    def brain(received: Received) -> Reply:
        return Reply([text(json.dumps(booking_brain(_context_of(_first_user_texts(received)))))])

    with FakeGemini() as fake:
        fake.handler = brain
        log = tmp_path / "s.jsonl"
        ledger = tmp_path / "ledger.sqlite3"
        proc = host_agent("--url", host.url, "--room", "llm", "--goal", goal, "--log", str(log), "--planner", "llm",
                          "--uid", "alice", env={**fake.env(), "STATE_BACKEND": "sqlite", "SQLITE_PATH": str(ledger)})
        assert proc.returncode == 0, proc.stdout + proc.stderr
        fake.assert_complete()
        assert len(fake.requests) == 7
    store = SqliteDocStore(str(ledger))  # every planner call is in alice's usage ledger
    try:
        entries = UsageRepo(store).between("alice", 0, 1e12)
    finally:
        store.close()
    assert len(entries) == 7 and {(e.component, e.operation_type, e.unit_kind) for e in entries} == {
        ("host_planner", "host_planner", "host_session")}
    records = _records(log)
    assert records[-1]["outcome"] == "completed"
    assert records[-1]["data"]["usage"]["requests"] == 7  # type: ignore[index]
    assert host.server.host_of("llm").booking.movie_id == "m2"


@pytest.mark.parametrize("kind", ["reference", "alt"])
def test_the_demo_runs_the_launcher_against_either_host(tmp_path: Path, kind: str) -> None:
    env = {k: v for k, v in os.environ.items() if k not in _MODEL_ENV and not k.startswith("HOST_DEMO_")}
    env["HOST_DEMO_LOG"] = str(tmp_path / "demo.jsonl")
    proc = subprocess.run([sys.executable, "-m", "hostagent.demo", "--host", kind], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=RUN_LIMIT_S)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert f"== {kind} host on ws://127.0.0.1:" in out and "host-agent exited 0" in out
    assert f"== {LAUNCHER} --url ws://127.0.0.1:" in out and "--room demo --goal 'Book two tickets" in out
    assert "--planner rules --timeout-s 5" in out
    for stage in ("browse", "showtimes", "seats", "checkout", "confirmation"):
        assert f"[stage {stage}]" in out
    assert "agent (question): Which name and email should the booking be made for?" in out
    assert "user: " in out and "Ada Lovelace" in out and "ada@example.com" in out
    assert "<- error TOOL_EXECUTION_FAILED" in out and "session finished: completed" in out
    records = _records(tmp_path / "demo.jsonl")
    check_log(records)
    assert records[-1]["outcome"] == "completed"


def test_make_host_demo_passes_the_host_of_its_command_line_or_environment() -> None:
    makefile = (REPO / "Makefile").read_text()
    assert "host-demo: $(RUNTIME) $(VENV)/bin/host-agent" in makefile
    assert "$(PY) -m hostagent.demo --host $(DEMO_HOST)" in makefile
    env = {k: v for k, v in os.environ.items() if k != "HOST"}
    dry = [subprocess.run(["make", "-n", "host-demo", *args], cwd=REPO, env={**env, **extra}, capture_output=True,
                          text=True, timeout=RUN_LIMIT_S).stdout
           for args, extra in (([], {}), (["HOST=alt"], {}), ([], {"HOST": "build-box-7"}), ([], {"HOST": "alt"}))]
    assert "-m hostagent.demo --host reference" in dry[0]
    assert "-m hostagent.demo --host alt" in dry[1]
    assert "-m hostagent.demo --host reference" in dry[2]  # a shell's own HOST variable is not a host kind
    assert "-m hostagent.demo --host alt" in dry[3]  # HOST=alt make host-demo


def test_an_unanswered_question_exits_6(tmp_path: Path) -> None:
    with running(user_profile=None) as alt:
        log = tmp_path / "s.jsonl"
        proc = host_agent("--url", alt.url, "--room", "q", "--goal", "Book 1 seat for Dune", "--log", str(log),
                          "--question-timeout-s", "1", "--max-session-s", "30")
    assert proc.returncode == 6, proc.stdout + proc.stderr
    assert "agent (question): Which name and email should the booking be made for?" in proc.stdout
    assert "agent (blocked): I am stopping without finishing: no answer to my question within 1s" in proc.stdout
    assert "session finished: no_answer" in proc.stdout
    records = _records(log)
    check_log(records)
    assert records[-1]["outcome"] == "no_answer" and records[-1]["data"]["exit_code"] == 6  # type: ignore[index]


def test_a_contact_profile_books_without_asking(tmp_path: Path) -> None:
    with running(user_profile=None) as alt:  # nobody would answer a question
        log = tmp_path / "s.jsonl"
        proc = host_agent("--url", alt.url, "--room", "p", "--goal", "Book 1 seat for Dune", "--log", str(log),
                          "--contact", "Grace Hopper <grace@example.com>", "--question-timeout-s", "1")
        buyer = alt.server.visit("p").buyer
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "(question)" not in proc.stdout and "session finished: completed" in proc.stdout
    assert buyer == ("Grace Hopper", "grace@example.com")


@pytest.mark.parametrize("value", ["Grace Hopper", "grace@example.com", " "])
def test_a_contact_without_a_name_and_an_address_is_bad_usage(tmp_path: Path, value: str) -> None:
    proc = host_agent("--url", "ws://127.0.0.1:9/x", "--room", "r", "--goal", "g", "--log", str(tmp_path / "s.jsonl"),
                      "--contact", value)
    assert proc.returncode == 2 and "--contact" in proc.stderr and "is missing" in proc.stderr, proc.stderr
    assert not (tmp_path / "s.jsonl").exists()
