"""The plan view links a session's workspaces to their files, read-only (issue 26): a confirmed
session whose task creates a workspace and writes a file with a script, then the console shows the
workspace under the session and opens the file. Its own dev server, with the sandbox service as
its own process."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from shared.auth import LocalAuthenticator
from shared.models.base import DeltaSink, ModelRequest, ModelResponse, Part, Turn
from shared.models.scripted import call
from shared.runtime import Runtime
from shared.state.records import UserRecord
from shared.state.sqlite_docstore import SqliteDocStore
from tests.agent.conftest import make_settings
from tests.console.conftest import CALL_USAGE, Console, ConsoleModel, api, open_console
from tests.sandbox.support import SandboxProcess
from tests.serving import served

UID = "wes"


class CodingModel(ConsoleModel):
    """The console's model, whose plan tasks create a workspace and write a file in it."""

    def generate(self, request: ModelRequest, on_delta: DeltaSink | None = None) -> ModelResponse:
        if request.response_schema is None and "executing a confirmed plan" in request.system_instruction:
            answered = {p.function_response.name: p.function_response.response
                        for t in request.turns for p in t.parts if p.function_response is not None}
            if "container_exec" in answered:
                turn = Turn(role="model", parts=[Part(text="Task done.")])
            elif "container_create" in answered:
                wid = answered["container_create"]["containerId"]
                turn = Turn(role="model", parts=[call("container_exec", {
                    "containerId": wid, "script": "mkdir -p notes && echo 'hello from the sandbox' > notes/today.md"})])
            else:
                turn = Turn(role="model", parts=[call("container_create", {"group": "notes"})])
            return ModelResponse(turn=turn, usage=CALL_USAGE, finish_reason="STOP")
        return super().generate(request, on_delta)


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    base: Path = tmp_path_factory.mktemp("console-sandbox")
    box = SandboxProcess.start(base, snapshot_dir=base / "snapshots")
    store = SqliteDocStore(str(base / "state.sqlite3"))
    model = CodingModel()
    rt = Runtime(make_settings(dispatcher="inline", run_deadline_s=60.0, sandbox_url=box.url, sandbox_key=box.key),
                 store=store, model=model, authenticator=LocalAuthenticator())
    rt.users.put_user(UserRecord(uid=UID, trust_level="autonomous"))
    try:
        with served(rt=rt) as url:
            yield Console(url=url + "/", model=model, runtime=rt)
    finally:
        store.close()
        box.stop()


def _ended(console: Console, session_id: str) -> dict[str, object]:
    for _ in range(300):
        view: dict[str, object] = api(console, "GET", f"/api/agent/sessions/{session_id}", UID)
        if view["status"] in ("completed", "failed"):
            return view
        threading.Event().wait(0.1)
    raise AssertionError("the session never ended")


def test_the_plan_view_opens_a_tasks_workspace_files(page: Page, console: Console) -> None:
    created = api(console, "POST", "/api/agent/sessions", UID, body={"prompt": "Write today's notes",
                                                                     "keepWorkspaces": True})
    sid = created["sessionId"]
    api(console, "POST", f"/api/agent/sessions/{sid}/confirm", UID, body={"planVersion": 1})
    assert _ended(console, sid)["status"] == "completed"
    (workspace,) = api(console, "GET", "/api/agent/containers", UID)["containers"]

    open_console(page, console, UID, view="plans")
    page.locator(f"#plans-known li[data-session-id={sid}]").get_by_role("link", name=sid).click()
    item = page.locator(f".session[data-session-id={sid}] li[data-container-id={workspace['containerId']}]")
    expect(item).to_contain_text("notes")
    item.locator("summary").click()
    link = item.locator("a[data-path='notes/today.md']")
    expect(link).to_be_visible()
    link.click()
    expect(item.locator("pre.workspace-file")).to_have_text("hello from the sandbox\n")
    expect(item.locator(".workspace-files")).not_to_contain_text("null")
    console.screenshot(page, "plan-workspace-files")
