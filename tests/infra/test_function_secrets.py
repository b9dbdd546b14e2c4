"""Each deployed function is given exactly the secrets its code reads (issue 35), derived, not listed.

Every route of the route table (``shared/routes.py``) is served through ``make dev``'s app, each
request by a runtime of its own (as each function is its own process in production, so nothing a
request builds is shared with the next), whose settings record every read of a secret-backed
setting; the resume function's messages are handled the same way. What a function's requests read
is what that function needs; ``Function.secrets`` (what the infra program mounts and grants:
infra/tests/test_secrets.py, test_iam.py) must be exactly that. A secret missing from a function
is a silent fallback in production (the ``agent-sessions`` finding of issue 35); one too many is
more than least privilege. A route without a request below fails the test (every route is served).
"""

from __future__ import annotations

import dataclasses
import re
import sys
import traceback
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from typing import Any, get_args

import pytest
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from devserver import create_app
from shared.auth import LocalAuthenticator
from shared.config import Settings
from shared.durable.dispatcher import RecordingDispatcher
from shared.models.factory import clear_model_cache
from shared.routes import FUNCTIONS, ID_SEGMENT, ROUTES, SecretName
from shared.runtime import Runtime, set_runtime
from shared.state.docstore import DocStore
from tests.agent.conftest import make_settings
from tests.e2e.test_openapi import KEY

SECRET_SETTINGS: dict[str, SecretName] = {
    "gemini_api_key": "gemini",
    "credentials_encryption_key": "credentials",
    "google_oauth_client_secret": "google_oauth",
}
"""The settings each secret of the route table is read into (``shared/config.py``)."""
USER = {"Authorization": "Bearer dev:alice"}
ADMIN = {"Authorization": "Bearer dev-admin:ops"}
A2A = {**USER, "A2A-Version": "1.0"}
GOOGLE = {"accessToken": "ya29.a", "refreshToken": "1//r", "expiresIn": 3599, "accountEmail": "alice@example.com",
          "scopes": ["https://www.googleapis.com/auth/gmail.modify", "https://www.googleapis.com/auth/calendar"]}


class Trace:
    """Which function is serving (``current``), what each function read, which routes were served."""

    def __init__(self) -> None:
        self.current = "-"
        self.reads: dict[str, set[SecretName]] = defaultdict(set)
        self.served: set[tuple[str, str]] = set()
        self.first: dict[tuple[str, SecretName], str] = {}
        """Where each function first read each secret (the failure message shows it)."""


def traced_settings(trace: Trace, base: Settings) -> Settings:
    """``base`` as an instance that records each read of a secret-backed setting for ``trace.current``."""

    class Traced(Settings):
        def __getattribute__(self, name: str) -> Any:
            secret = SECRET_SETTINGS.get(name)
            # The dataclass's own __hash__/__eq__/__repr__ touch every field (a cache key): no use.
            if secret is not None and sys._getframe(1).f_code.co_name not in ("__hash__", "__eq__", "__repr__"):
                if secret not in trace.reads[trace.current]:
                    trace.first[(trace.current, secret)] = "".join(traceback.format_stack(limit=14)[:-1])
                trace.reads[trace.current].add(secret)
            return super().__getattribute__(name)

    return Traced(**{f.name: getattr(base, f.name) for f in dataclasses.fields(base)})


def _pattern(path: str, segments: dict[str, str]) -> re.Pattern[str]:
    return re.compile(re.sub(r"\\\{(\w+)\\\}", lambda m: f"(?:{segments.get(m.group(1), ID_SEGMENT)})",
                             re.escape(path)))


TABLE = [(r, _pattern(r.path, dict(r.segments))) for r in ROUTES if r.function is not None]


def route_of(method: str, path: str) -> tuple[str, str, str]:
    """(function, method, table path) of a request, the first route that matches (table order)."""
    for route, pattern in TABLE:
        if route.method == method and pattern.fullmatch(path):
            return str(route.function), route.method, route.path
    raise AssertionError(f"{method} {path} is no route of the table")


class Served:
    """The dev app, each request served by a fresh runtime with traced settings, attributed to the
    function of its route; ``deliver`` hands the queued work messages to the resume function."""

    def __init__(self, store: DocStore, trace: Trace, settings: Settings) -> None:
        self.store, self.trace, self.settings = store, trace, settings
        self.dispatcher = RecordingDispatcher()
        self.client: FlaskClient = create_app().test_client()

    def fresh(self, function: str) -> Runtime:
        self.trace.current = function
        clear_model_cache()  # the factory keeps one model per process: a new process has none
        rt = Runtime(self.settings, store=self.store, authenticator=LocalAuthenticator(), dispatcher=self.dispatcher)
        set_runtime(rt)
        return rt

    def call(self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None,
             ok: Iterable[int] = (200, 201, 202, 204)) -> TestResponse:
        function, route_method, route_path = route_of(method, path.split("?")[0])
        self.fresh(function)
        resp = self.client.open(path, method=method, json=body, headers=headers or USER)
        resp.get_data()  # a streamed answer is produced here, still by this request's runtime
        self.trace.served.add((route_method, route_path))
        assert resp.status_code in ok, (method, path, resp.status_code, resp.get_data(as_text=True)[:600])
        return resp

    def deliver(self) -> int:
        handled = 0
        while messages := self.dispatcher.take():
            for message in messages:
                self.fresh("resume").router.handle(message)
                handled += 1
        return handled


@pytest.fixture
def served(sqlite_docstore: DocStore, monkeypatch: pytest.MonkeyPatch) -> Iterator[Served]:
    trace = Trace()
    # No Gemini key: make dev's offline model (the factory reads the key to choose); every secret
    # the runtime can use is configured, so nothing is skipped for want of one.
    settings = traced_settings(trace, make_settings(
        credentials_encryption_key=KEY, google_oauth_client_id="client-1.apps.googleusercontent.com",
        google_oauth_client_secret="oauth-secret", mcp_allow_private_urls=True, dispatcher="none",
        github_api_base_url="http://127.0.0.1:9"))  # nothing listens: no request leaves the machine
    # Code that reads the environment itself (the goals entry point) gets the same traced settings.
    monkeypatch.setattr(Settings, "from_env", classmethod(lambda cls: settings))
    yield Served(sqlite_docstore, trace, settings)
    set_runtime(None)


def run(s: Served, prompt: str, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = s.call("POST", "/api/agent/run", {"prompt": prompt, **extra}).get_json()
    return body


def drive_every_route(s: Served) -> None:
    """A user's day through every route; each request as its function serves it."""
    call: Callable[..., TestResponse] = s.call
    # integrations: connector tokens, own MCP servers and A2A agents, schedules, webhooks
    call("POST", "/api/integrations/google", GOOGLE)
    call("POST", "/api/integrations/github", {"accessToken": "ghp_fakeGitHubToken0123456789"})
    call("GET", "/api/integrations")
    call("GET", "/api/integrations/google")
    for kind in ("mcp", "a2a"):
        call("POST", f"/api/integrations/{kind}/notes", {"url": "http://127.0.0.1:9/x", "accessToken": "tok"})
        call("GET", f"/api/integrations/{kind}")
        call("GET", f"/api/integrations/{kind}/notes")
    call("GET", "/api/integrations/mcp/notes/tools", ok=(200, 502, 503))
    call("PUT", "/api/agent/schedules/brief", {"cron": "0 8 * * *", "prompt": "brief me"})
    call("GET", "/api/agent/schedules")
    call("GET", "/api/agent/schedules/brief")
    call("GET", "/api/agent/schedules/brief/runs")
    call("PUT", "/api/agent/webhooks/hook", {"url": "http://127.0.0.1:9/hook", "events": ["run.*"]})
    call("GET", "/api/agent/webhooks")
    call("GET", "/api/agent/webhooks/hook")
    call("GET", "/api/agent/webhooks/hook/deliveries")

    # run / stream / agui: connector tools (Google: the OAuth client refreshes the token)
    mailed = run(s, "Search my Gmail for invoices")
    assert mailed["tool"] == "gmail_search", mailed
    call("POST", "/api/agent/run/stream", {"prompt": "What is on my calendar today?"})
    call("POST", "/api/agent/agui", {"threadId": "t-agui", "runId": "r-agui", "state": {}, "tools": [],
                                     "context": [], "forwardedProps": {},
                                     "messages": [{"id": "m1", "role": "user", "content": "Search my Gmail"}]})
    # approve + resume: side effects decided, then executed by the resume function (a memory, a mail)
    for prompt in ("Remember that I like tea", "Send an email to alice@example.com with subject Hi saying hello"):
        paused = run(s, prompt)
        assert paused["status"] == "awaiting_confirmation", paused
        call("GET", f"/api/agent/approvals/{paused['approval']['approvalId']}")
        call("POST", "/api/agent/approve", {"approvalId": paused["approval"]["approvalId"], "decision": "approve"})
        assert s.deliver() >= 1
    cancelled = run(s, "Remember that I like coffee")
    call("POST", f"/api/agent/runs/{cancelled['runId']}/cancel", {"reason": "no"})
    s.deliver()
    # runs
    call("GET", "/api/agent/runs")
    call("GET", f"/api/agent/runs/{mailed['runId']}")
    call("GET", f"/api/agent/runs/{mailed['runId']}/events")
    call("GET", f"/api/agent/runs/{mailed['runId']}/trace")
    call("GET", "/api/agent/approvals")
    call("DELETE", f"/api/agent/runs/{mailed['runId']}")
    call("GET", "/api/agent/usage")
    # sessions: planning, a repository context (the GitHub token), execution by resume
    created = call("POST", "/api/agent/sessions", {"prompt": "Remember that the plan worked",
                                                    "repoUrl": "https://github.com/octo/hello"}).get_json()
    sid = created["sessionId"]
    call("GET", "/api/agent/sessions")
    refined = call("POST", f"/api/agent/sessions/{sid}/refine", {"message": "also remember the date"}).get_json()
    call("GET", f"/api/agent/sessions/{sid}")
    call("POST", f"/api/agent/sessions/{sid}/confirm", {"planVersion": refined["plan"]["version"]})
    s.deliver()
    call("GET", f"/api/agent/sessions/{sid}/events")
    other = call("POST", "/api/agent/sessions", {"prompt": "Remember nothing"}).get_json()
    call("POST", f"/api/agent/sessions/{other['sessionId']}/cancel", {"reason": "no"})
    s.deliver()
    # goals (the backend's planning agent)
    call("POST", "/agent/run", {"message": "I want to run a marathon"}, headers={})
    # containers (no workspace: the lists are empty, unknown ids 404)
    call("GET", "/api/agent/containers")
    call("GET", "/api/agent/containers/ws_0123/files", ok=(404,))
    call("DELETE", "/api/agent/containers/ws_0123", ok=(404,))
    # a2a: both transports, tasks and push configurations
    msg = {"role": "ROLE_USER", "messageId": "m-1", "parts": [{"text": "Search my Gmail for receipts"}]}
    task = call("POST", "/a2a/message:send", {"message": msg}, headers=A2A).get_json()["task"]
    tid = task["id"]
    call("POST", "/a2a/message:stream", {"message": {**msg, "messageId": "m-2"}}, headers=A2A)
    call("POST", "/a2a", {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": tid}}, headers=A2A)
    call("GET", "/a2a/tasks", headers=A2A)
    call("GET", f"/a2a/tasks/{tid}", headers=A2A)
    config = {"url": "https://example.com/push", "id": "cfg1"}
    call("POST", f"/a2a/tasks/{tid}/pushNotificationConfigs", config, headers=A2A, ok=range(200, 500))
    call("GET", f"/a2a/tasks/{tid}/pushNotificationConfigs", headers=A2A, ok=range(200, 500))
    call("GET", f"/a2a/tasks/{tid}/pushNotificationConfigs/cfg1", headers=A2A, ok=range(200, 500))
    call("DELETE", f"/a2a/tasks/{tid}/pushNotificationConfigs/cfg1", headers=A2A, ok=range(200, 500))
    call("GET", f"/a2a/tasks/{tid}:subscribe", headers=A2A, ok=range(200, 500))
    call("POST", f"/a2a/tasks/{tid}:subscribe", {}, headers=A2A, ok=range(200, 500))
    call("POST", f"/a2a/tasks/{tid}:cancel", {}, headers=A2A, ok=range(200, 500))
    call("GET", "/a2a/extendedAgentCard", headers=A2A, ok=range(200, 500))
    call("GET", "/.well-known/agent-card.json", headers={})
    # data: threads, memories, export, erasure
    threads = call("GET", "/api/agent/threads").get_json()["threads"]
    call("GET", f"/api/agent/threads/{threads[0]['threadId']}")
    memories = call("GET", "/api/agent/memories").get_json()["memories"]
    call("DELETE", f"/api/agent/memories/{memories[0]['memoryId']}")
    ended = run(s, "hello")
    call("DELETE", f"/api/agent/threads/{ended['threadId']}")
    call("POST", "/api/agent/me/export")
    # admin
    call("GET", "/api/admin/users/alice", headers=ADMIN)
    call("PATCH", "/api/admin/users/alice", {"trustLevel": "delegated"}, headers=ADMIN)
    # the rest of integrations, and the erasure last
    for kind in ("mcp", "a2a"):
        call("DELETE", f"/api/integrations/{kind}/notes")
    call("DELETE", "/api/agent/schedules/brief")
    call("DELETE", "/api/agent/webhooks/hook")
    call("DELETE", "/api/integrations/google")
    call("DELETE", "/api/agent/me")


def test_each_function_gets_exactly_the_secrets_its_routes_read(served: Served) -> None:
    assert set(SECRET_SETTINGS.values()) == set(get_args(SecretName))
    drive_every_route(served)
    trace = served.trace
    every = {(r.method, r.path) for r, _ in TABLE}
    assert every - trace.served == set(), "routes no request of this test served: add them to drive_every_route"
    derived = {f.name: set(trace.reads.get(f.name, set())) for f in FUNCTIONS}
    declared = {f.name: set(f.secrets) for f in FUNCTIONS}
    def where(name: str) -> str:
        return "".join(f"  {secret} first read at:\n{trace.first[(name, secret)]}"
                       for secret in sorted(derived[name] - declared[name]))

    assert derived == declared, "\n".join(
        f"{name}: reads {sorted(derived[name])}, is given {sorted(declared[name])}\n{where(name)}"
        for name in sorted(declared) if derived[name] != declared[name])
    assert "-" not in trace.reads, trace.reads["-"]
