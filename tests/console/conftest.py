"""Browser fixtures: Debian's Chromium driven by Playwright, and the dev app on a loopback port.

- ``browser`` (module): one headless Chromium (``/usr/bin/chromium``, installed by the Makefile)
  for all the browser tests (they are one module). Not session-scoped on purpose: Playwright's sync
  API keeps an asyncio loop running on the main thread while it is started, which would break
  ``asyncio.run`` in the tests that come after. Playwright never downloads a browser here; a
  missing or broken Chromium makes every browser test ERROR with the reason, never skip.
- ``console`` (module): the dev app (``devserver.create_app``) served by werkzeug on a free
  127.0.0.1 port in a thread, over a fresh SQLite store, local auth, the inline dispatcher (an
  approval resumes the run on a background thread, as in ``make dev``) and ``ConsoleModel``.
- ``page``: a new browser context per test (its own localStorage) at 1280x800.
Each test writes a screenshot of its main view to ``var/screenshots/``.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, Playwright, expect, sync_playwright

from shared.auth import LocalAuthenticator
from shared.models.base import DeltaSink, ModelRequest, ModelResponse, Part, Turn, Usage
from shared.models.scripted import call
from shared.runtime import Runtime
from shared.state.sqlite_docstore import SqliteDocStore
from tests import serving
from tests.agent.conftest import make_settings
from tests.fakes import fixed_plans

REPO = Path(__file__).resolve().parents[2]
SCREENSHOTS = REPO / "var" / "screenshots"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
WAIT_MS = 30_000
"""Upper bound of any wait for the page (a hang fails after it); never a speed assertion."""
GATE_S = 60.0
CREDENTIALS_KEY = base64.b64encode(bytes(range(32))).decode()
"""Lets the Integrations view store tokens (encrypted) in the test store."""
CALL_USAGE = Usage(requests=1, input_tokens=100, output_tokens=20, total_tokens=120)
"""Every ConsoleModel call reports these figures, so the usage view's sums are known."""


def _prompt(request: ModelRequest) -> str:
    """The user's prompt: the last text of the last user turn that has text (tool results follow it)."""
    for turn in reversed(request.turns):
        texts = [p.text for p in turn.parts if turn.role == "user" and p.text and not p.thought]
        if texts:
            return texts[-1]
    return ""


class ConsoleModel:
    """Deterministic answers chosen by the prompt's first word (``kind: rest``):

    - ``stream``: a thought, the text "Hello ", then (after the ``stream`` gate opens) "from the console."
    - ``remember``: calls ``save_memory`` (a side effect: the run pauses for approval); with its
      result, answers "Saved: <rest>".
    - ``slow``: calls ``search_memory`` (executes at once), then waits for the ``slow`` gate before
      answering "Finished after the reload."
    - ``draft``: calls ``agent_create_plan`` (``draft_only``: a plan session left for review); with its
      result, answers "The plan is ready for your review."
    - ``plan``: calls ``agent_create_plan`` (``auto_execute``: the plan runs, live in the chat turn);
      with its result, answers "The plan finished."
    - anything else: answers "Plain answer."
    Plan sessions: structured requests (plan drafts, refinements, reflections) get fixed JSON
    (``tests/fakes/fixed_plans.py``: three steps, a refinement appends "Follow up: <request>", a task completes when
    its act ends it; the offline model's own plans are tested in test_first_screen.py); each task's
    first act reasons "I will look up the notes first." and calls ``search_memory``, its next act
    ends the task; the first act of task 2 waits for the ``plan`` gate.
    A session whose prompt starts with ``save:`` calls ``save_memory`` (a side effect: the session
    waits for approval) as task 1's first act.
    A gate is opened by the test (``release``) and is re-armed by ``hold``.
    """

    def __init__(self) -> None:
        self._gates: dict[str, threading.Event] = {}
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return "console-scripted"

    def hold(self, kind: str) -> threading.Event:
        with self._lock:
            gate = self._gates[kind] = threading.Event()
        return gate

    def release_all(self) -> None:
        with self._lock:
            for gate in self._gates.values():
                gate.set()

    def _wait(self, kind: str) -> None:
        with self._lock:
            gate = self._gates.get(kind)
        if gate is not None and not gate.wait(GATE_S):
            raise TimeoutError(f"the test never released the {kind!r} gate")

    def generate(self, request: ModelRequest, on_delta: DeltaSink | None = None) -> ModelResponse:
        if request.response_schema is not None:
            return ModelResponse(turn=Turn(role="model", parts=[Part(text=json.dumps(fixed_plans.answer(request)))]),
                                 usage=CALL_USAGE, finish_reason="STOP")
        prompt = _prompt(request)
        kind, _, rest = prompt.partition(":")
        kind, rest = kind.strip().lower(), rest.strip()
        results = [p.function_response for p in request.turns[-1].parts if p.function_response is not None]
        emit = on_delta or (lambda _kind, _text: None)
        if "executing a confirmed plan" in request.system_instruction:
            if results:
                turn = _text("Task done.", emit)
            else:
                if prompt.startswith("Task 2 of"):
                    self._wait("plan")
                if prompt.startswith("Task 1 of") and "save:" in prompt:
                    turn = Turn(role="model", parts=[Part(text="I will save the note."),
                                                     call("save_memory", {"text": "the plan's note"})])
                else:
                    turn = Turn(role="model", parts=[Part(text="I will look up the notes first."),
                                                     call("search_memory", {"query": "notes"})])
        elif kind == "stream":
            emit("thought", "Weighing the greeting")
            emit("text", "Hello ")
            self._wait("stream")
            emit("text", "from the console.")
            turn = Turn(role="model", parts=[Part(text="Weighing the greeting", thought=True),
                                             Part(text="Hello from the console.")])
        elif kind == "remember" and not results:
            turn = Turn(role="model", parts=[call("save_memory", {"text": rest})])
        elif kind == "remember":
            turn = _text(f"Saved: {rest}", emit)
        elif kind == "draft" and not results:
            turn = Turn(role="model", parts=[call("agent_create_plan", {"objective": rest,
                                                                        "execution_mode": "draft_only"})])
        elif kind == "draft":
            turn = _text("The plan is ready for your review.", emit)
        elif kind == "plan" and not results:
            turn = Turn(role="model", parts=[call("agent_create_plan", {"objective": rest,
                                                                        "execution_mode": "auto_execute"})])
        elif kind == "plan":
            turn = _text("The plan finished.", emit)
        elif kind == "slow" and not results:
            turn = Turn(role="model", parts=[call("search_memory", {"query": rest or "tea"})])
        elif kind == "slow":
            self._wait("slow")
            turn = _text("Finished after the reload.", emit)
        else:
            turn = _text("Plain answer.", emit)
        return ModelResponse(turn=turn, usage=CALL_USAGE, finish_reason="STOP")


def _text(text: str, emit: DeltaSink) -> Turn:
    emit("text", text)
    return Turn(role="model", parts=[Part(text=text)])


@dataclass
class Console:
    url: str
    model: ConsoleModel
    runtime: Runtime

    def screenshot(self, page: Page, name: str) -> Path:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path


@pytest.fixture(scope="module")
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as pw:
        yield pw


@pytest.fixture(scope="module")
def browser(playwright: Playwright) -> Iterator[Browser]:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: the browser tests need Debian's chromium package "
                    "(make venv / make test install it with apt-get)", pytrace=False)
    try:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
    except Exception as exc:
        pytest.fail(f"{CHROMIUM} did not start under Playwright: {exc}", pytrace=False)
    expect.set_options(timeout=WAIT_MS)
    yield browser
    browser.close()


@contextmanager
def served(directory: Path, **settings: Any) -> Iterator[Console]:
    """The dev app over a fresh SQLite store in ``directory`` with ``ConsoleModel``, local auth, the
    inline dispatcher and ``settings`` (over the tests' defaults), on a free loopback port."""
    store = SqliteDocStore(str(directory / "state.sqlite3"))
    model = ConsoleModel()
    rt = Runtime(make_settings(dispatcher="inline", run_deadline_s=60.0, **settings),
                 store=store, model=model, authenticator=LocalAuthenticator())
    with serving.served(rt=rt) as url:
        try:
            yield Console(url=url + "/", model=model, runtime=rt)
        finally:
            model.release_all()  # no run is left waiting on a gate
    store.close()


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    with served(tmp_path_factory.mktemp("console"), credentials_encryption_key=CREDENTIALS_KEY,
                mcp_allow_private_urls=True) as served_console:
        yield served_console


@pytest.fixture
def page(browser: Browser, console: Console) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    console.model.release_all()
    context.close()
    assert errors == [], f"uncaught errors in the page: {errors}"


def open_console(page: Page, console: Console, uid: str, view: str = "chat") -> None:
    """Open the console, sign in as dev user ``uid`` with the keyboard, and show ``view``."""
    page.goto(f"{console.url}#/{view}")
    expect(page.locator("body[data-ready=true]")).to_be_attached()
    page.fill("#dev-user", uid)
    page.press("#dev-user", "Enter")
    expect(page.locator("#dev-user-token")).to_have_text(f"Authorization: Bearer dev:{uid}")


def api(console: Console, method: str, path: str, uid: str, body: dict[str, Any] | None = None) -> Any:
    """A call to the console's server as a backend would make it (for setting up and checking)."""
    import json
    import urllib.request

    req = urllib.request.Request(console.url.rstrip("/") + path, method=method,
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"Authorization": f"Bearer dev:{uid}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=WAIT_MS / 1000) as resp:
        return json.loads(resp.read())
