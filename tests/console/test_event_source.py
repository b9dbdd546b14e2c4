"""A real ``EventSource`` in Chromium follows a run through its approval to its end (issue 34):
the events route as Server-Sent Events, authenticated by the session cookie (an EventSource sends
no headers), its follow windows set short so the browser reconnects by itself with
``Last-Event-ID`` several times; what it received is the run's log, each event once, in order."""

from __future__ import annotations

import json
import threading
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser

from shared.auth import LocalAuthenticator
from shared.models.scripted import ScriptedModel, call, calls_turn, text_turn
from shared.runtime import Runtime
from shared.state.sqlite_docstore import SqliteDocStore
from tests.agent.conftest import make_settings
from tests.console.conftest import WAIT_MS
from tests.serving import served

FOLLOW_JS = """([url, waitMs]) => new Promise((resolve, reject) => {
  const seen = [], opens = [], beats = 0;
  const source = new EventSource(url);
  const timer = setTimeout(() => { source.close(); reject(new Error('no end: ' + JSON.stringify(seen))); }, waitMs);
  source.onopen = () => opens.push(Date.now());
  const take = (e) => {
    const ev = JSON.parse(e.data);
    seen.push({id: e.lastEventId, ev});
    if ((ev.type === 'result' && ev.result.status === 'completed') || ev.type === 'error') {
      clearTimeout(timer); source.close(); resolve({seen, opens: opens.length});
    }
  };
  for (const type of ['status', 'delta', 'thought_delta', 'tool_call', 'tool_result', 'usage', 'result', 'error',
                      'agent_state', 'stream_end']) source.addEventListener(type, take);
})"""


def api(url: str, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    req = urllib.request.Request(url + path, method=method, data=None if body is None else json.dumps(body).encode(),
                                 headers={"Authorization": "Bearer dev:alice", "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=WAIT_MS / 1000) as resp:
        return json.loads(resp.read())


@pytest.fixture
def server(tmp_path: Any) -> Iterator[tuple[str, Runtime]]:
    store = SqliteDocStore(str(tmp_path / "state.sqlite3"))
    model = ScriptedModel([calls_turn(call("save_memory", {"text": "Alice likes tea"})), text_turn("Saved.")])
    rt = Runtime(make_settings(dispatcher="inline", follow_max_wait_s=0.5, heartbeat_s=0.1), store=store, model=model,
                 authenticator=LocalAuthenticator())
    try:
        with served(rt=rt) as url:
            yield url, rt
    finally:
        store.close()


def test_an_event_source_follows_a_run_through_its_approval(browser: Browser, server: tuple[str, Runtime]) -> None:
    url, rt = server
    run = api(url, "POST", "/api/agent/run", {"prompt": "remember that Alice likes tea"})
    assert run["status"] == "awaiting_confirmation"
    context = browser.new_context()
    context.add_cookies([{"name": "__session", "value": "dev:alice", "url": url}])
    page = context.new_page()
    page.goto(url + "/healthz")  # same origin as the events route
    follow = f"/api/agent/runs/{run['runId']}/events?after=0&follow=1&until=end"
    decided = threading.Timer(1.5, api, args=(url, "POST", "/api/agent/approve",
                                              {"approvalId": run["approval"]["approvalId"], "decision": "approve"}))
    decided.start()
    try:
        got = page.evaluate(FOLLOW_JS, [follow, WAIT_MS])
    finally:
        decided.join()
        context.close()
    events = [item["ev"] for item in got["seen"] if item["ev"]["type"] != "stream_end"]
    closings = [item["ev"] for item in got["seen"] if item["ev"]["type"] == "stream_end"]
    log = rt.runs.list_events(run["runId"])
    assert events == log  # every event once, in order, across the approval and the reconnects
    assert [item["id"] for item in got["seen"] if item["ev"]["type"] != "stream_end"] == [str(e["seq"]) for e in log]
    assert events[-1]["type"] == "result" and events[-1]["result"]["status"] == "completed"
    # the short windows closed with stream_end and the browser reconnected by itself with Last-Event-ID
    assert closings and got["opens"] == len(closings) + 1, got
    assert [m.text for m in rt.users.list_memories("alice")] == ["Alice likes tea"]
