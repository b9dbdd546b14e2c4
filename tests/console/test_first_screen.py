"""The console's first hour (issue 31), in headless Chromium against the dev app with ``make dev``'s
own offline model (no key): the first screen's three example prompts (a tool call, an approval, a
plan) each work when clicked, the offline label is shown once per run, the chat scrolls to the
resumed answer, a plan's run timeline reads well, and the goals playground speaks for the signed-in
user. Screenshots go to var/screenshots/ (first-screen*.png, first-hour-*.png)."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from shared.auth import LocalAuthenticator
from shared.config import McpServer
from shared.models.offline import LABEL, OfflineModel
from shared.runtime import Runtime
from shared.state.sqlite_docstore import SqliteDocStore
from tests.agent.conftest import make_settings
from tests.console.conftest import CREDENTIALS_KEY, SCREENSHOTS, Console, ConsoleModel, api, open_console
from tests.serving import served


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    """The dev app with the offline model ``make dev`` uses without a key (at a short pace)."""
    store = SqliteDocStore(str(tmp_path_factory.mktemp("first-hour") / "state.sqlite3"))
    time_server = McpServer(name="time", command=(sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"))
    rt = Runtime(make_settings(dispatcher="inline", run_deadline_s=60.0, credentials_encryption_key=CREDENTIALS_KEY,
                               mcp_servers=(time_server,), mcp_timeout_s=30.0),
                 store=store, model=OfflineModel(pace_s=0.005), authenticator=LocalAuthenticator())
    try:
        with served(rt=rt) as url:
            yield Console(url=url + "/", model=ConsoleModel(), runtime=rt)
    finally:
        store.close()


def labels(page: Page, run: str = "#chat-transcript .run") -> list[int]:
    """How often each run shows the offline label."""
    counts: list[int] = page.eval_on_selector_all(
        run, "(runs, label) => runs.map((r) => r.textContent.split(label).length - 1)", LABEL)
    return counts


def scrolled_to_end(page: Page) -> bool:
    at_end: bool = page.eval_on_selector(
        "#chat-transcript", "t => t.scrollTop + t.clientHeight >= t.scrollHeight - 2")
    return at_end


def test_the_first_screen_offers_three_examples_that_work(page: Page, console: Console) -> None:
    open_console(page, console, "newcomer")
    examples = page.locator("#chat-examples button.example")
    expect(examples).to_have_count(3)
    expect(page.locator("#chat-examples")).to_be_visible()
    assert [examples.nth(i).get_attribute("data-kind") for i in range(3)] == ["tool", "approval", "plan"]
    console.screenshot(page, "first-screen")

    # 1. A tool call: read-only, executed at once, then answered in words (labelled once).
    examples.nth(0).click()
    run = page.locator("#chat-transcript .run").last
    expect(run).to_have_attribute("data-status", "completed")
    expect(page.locator("#chat-examples")).to_be_hidden()  # the transcript is no longer empty
    expect(run.locator(".tool-card[data-tool=search_memory]")).to_have_attribute("data-result", "completed")
    expect(run.locator(".answer-text")).to_contain_text("search_memory answered")
    assert labels(page) == [1]

    # 2. An approval: the run pauses; approving from its card resumes it, and the chat scrolls there.
    page.click("#chat-new-thread")
    expect(page.locator("#chat-examples")).to_be_visible()
    page.locator("#chat-examples button.example[data-kind=approval]").click()
    paused = page.locator("#chat-transcript .run").last
    expect(paused).to_have_attribute("data-status", "awaiting_confirmation")
    expect(paused.locator(".approval-card")).to_contain_text('Remember: "I prefer window seats on trains"')
    paused.locator(".approval-card button.approve").click()
    expect(paused).to_have_attribute("data-status", "completed")
    answer = paused.locator(".answer-text").last
    expect(answer).to_contain_text("save_memory answered")
    expect(answer).to_be_in_viewport()
    page.wait_for_function("t => t.scrollTop + t.clientHeight >= t.scrollHeight - 2",
                           arg=page.query_selector("#chat-transcript"))
    assert scrolled_to_end(page)
    assert labels(page) == [1]  # the pause and the resumed answer: one label for the run
    console.screenshot(page, "first-hour-approval")
    # Once more on the same thread, now longer than the transcript's height: it scrolls to the answer.
    page.fill("#chat-prompt", "Remember that I like green tea")
    page.press("#chat-prompt", "Enter")
    second = page.locator("#chat-transcript .run").last
    expect(second.locator(".approval-card button.approve")).to_be_visible()
    page.evaluate("() => { document.querySelector('#chat-transcript').scrollTop = 0; }")  # the user scrolled up
    second.locator(".approval-card button.approve").click()
    expect(second).to_have_attribute("data-status", "completed")
    expect(second.locator(".answer-text").last).to_contain_text("save_memory answered")
    assert page.eval_on_selector("#chat-transcript", "t => t.scrollHeight > t.clientHeight + 50")  # it overflows
    expect(second.locator(".answer-text").last).to_be_in_viewport()
    assert scrolled_to_end(page)
    assert labels(page) == [1, 1]
    page.screenshot(path=str(SCREENSHOTS / "first-hour-resumed-viewport.png"))
    # Paused here, decided in the Approvals view: back in Chat, the resumed answer is drawn and in sight.
    page.fill("#chat-prompt", "Remember that I like oolong")
    page.press("#chat-prompt", "Enter")
    third = page.locator("#chat-transcript .run").last
    expect(third).to_have_attribute("data-status", "awaiting_confirmation")
    page.click("nav >> text=Approvals")
    inbox = page.locator("#approvals-list .approval-card")
    expect(inbox).to_have_count(1)
    inbox.locator("button.approve").click()
    expect(page.locator("#approvals-following .run")).to_have_attribute("data-status", "completed")
    page.click("nav >> text=Chat")
    resumed = page.locator("#chat-transcript .run").last
    expect(resumed).to_have_attribute("data-status", "completed")
    expect(resumed.locator(".answer-text").last).to_contain_text("save_memory answered")
    expect(resumed.locator(".answer-text").last).to_be_in_viewport()
    expect(resumed.locator(".approval-card")).to_have_attribute("data-decision", "decided")  # no stale buttons
    expect(resumed.locator(".approval-card button.approve")).to_be_disabled()
    page.wait_for_function("t => t.scrollTop + t.clientHeight >= t.scrollHeight - 2",
                           arg=page.query_selector("#chat-transcript"))
    page.screenshot(path=str(SCREENSHOTS / "first-hour-resumed-elsewhere-viewport.png"))

    # 3. A plan: agent_create_plan runs its steps in the same turn, then answers.
    page.click("#chat-new-thread")
    page.locator("#chat-examples button.example[data-kind=plan]").click()
    planned = page.locator("#chat-transcript .run").last
    expect(planned).to_have_attribute("data-status", "completed")
    expect(planned).to_contain_text("Look up what you remember about trains")
    expect(planned).to_contain_text("List my projects")
    expect(planned.locator(".answer-text").last).to_contain_text("is completed")
    expect(planned.locator(".answer-text").last).to_be_in_viewport()
    assert scrolled_to_end(page)
    assert labels(page) == [1]
    page.screenshot(path=str(SCREENSHOTS / "first-hour-plan-viewport.png"))  # as seen: scrolled to the answer
    console.screenshot(page, "first-hour-plan")  # (the full page: its layout resets the transcript's scroll)

    # The plan's own run: its timeline has no empty thread, no raw JSON, and one label.
    runs = api(console, "GET", "/api/agent/runs", "newcomer")["runs"]
    plan_run = next(r for r in runs if r["host"] == "plan")
    page.goto(f"{console.url}#/runs/{plan_run['runId']}")
    timeline = page.locator("#run-detail .timeline")
    expect(timeline.locator(".ev-plan_result")).to_be_attached()
    text = timeline.inner_text()
    assert "(thread )" not in text and "thread undefined" not in text
    assert page.locator("#run-detail .timeline .unknown-event").count() == 0
    # Said once by the model: its text (the deltas) carries the label once; the timeline also lists
    # the same words as the act's reasoning (executor_reason), also once.
    for kind in ("delta", "executor_reason"):
        said = page.locator(f"#run-detail .timeline .ev-{kind}").all_inner_texts()
        assert sum(t.count(LABEL) for t in said) == 1, (kind, text)
    expect(page.locator("#run-detail dl.facts")).not_to_contain_text("thread")
    console.screenshot(page, "first-hour-plan-run")


def test_the_goals_playground_uses_the_signed_in_user(page: Page, console: Console) -> None:
    open_console(page, console, "gwen", view="goals")
    expect(page.locator("#goals-user")).to_have_value("gwen")
    first_session = page.input_value("#goals-session")
    page.fill("#dev-user", "hugo")
    page.press("#dev-user", "Enter")
    expect(page.locator("#goals-user")).to_have_value("hugo")
    assert page.input_value("#goals-session") != first_session  # a new conversation for the new user
    assert page.get_attribute("#goals-user", "readonly") is not None
    page.fill("#goals-message", "I want to learn Kotlin.")
    page.press("#goals-message", "Enter")
    expect(page.locator("#goals-log .goals-answer").first).to_have_attribute("data-action", "save_preview")
    console.screenshot(page, "first-hour-goals")


def test_the_deployments_mcp_server_is_listed_and_called(page: Page, console: Console) -> None:
    """The pinned mcp-server-time as a deployment server: listed read-only with its tools in
    Integrations, and called by the offline model from a prompt that asks for the time."""
    open_console(page, console, "olga", view="integrations")
    row = page.locator("#mcp-status tr[data-deployment-server=time]")
    expect(row.locator("li[data-tool=time_get_current_time]")).to_be_visible()
    expect(row).to_contain_text("stdio")
    console.screenshot(page, "first-hour-deployment-mcp")
    page.click("nav >> text=Chat")
    page.fill("#chat-prompt", "What time is it in Tokyo?")
    page.press("#chat-prompt", "Enter")
    run = page.locator("#chat-transcript .run").last
    expect(run).to_have_attribute("data-status", "completed")
    expect(run.locator(".tool-card[data-tool=time_get_current_time]")).to_have_attribute("data-result", "completed")
    expect(run.locator(".answer-text")).to_contain_text("Asia/Tokyo")
