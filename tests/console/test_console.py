"""The dev console in a real headless Chromium against the dev app: a chat run streaming, an
approval decided from its card and the resumed run followed live, a reload in the middle of a run
catching up from the event log, a plan draft refined then confirmed and its tasks progressing,
the usage view, API errors shown with their code and message, integrations (a user's own MCP
servers among them, against a real SDK server over HTTP) and the goals playground.

Each test is its own dev user, so the tests share one server and store without seeing each other.
"""

from __future__ import annotations

import sys
import threading
from datetime import UTC, datetime
from typing import Any

from playwright.sync_api import Page, expect

from tests.agent.mcp_servers import serving
from tests.agent.test_mcp_tools import HTTP_SERVER
from tests.console.conftest import CALL_USAGE, Console, api, open_console


def test_a_chat_run_streams_into_the_page(page: Page, console: Console) -> None:
    gate = console.model.hold("stream")
    open_console(page, console, "alice")
    expect(page.locator("#context-types option[value=task]")).to_be_attached()  # read from /openapi.json
    page.fill("#chat-context-type", "task")
    page.focus("#chat-prompt")
    page.keyboard.type("stream: say hello")
    page.keyboard.press("Enter")  # Enter sends

    run = page.locator("#chat-transcript .run").last
    # The first delta is on the page while the model is still answering: the reply streams in.
    expect(run.locator(".answer-text")).to_have_text("Hello ")
    expect(run).to_have_attribute("data-status", "planning")
    state = run.locator(".agent-state .chip")
    expect(state).to_have_attribute("data-state", "thinking")  # agent_state as a chip
    expect(state).to_have_attribute("title", "agent state (contextType task)")
    expect(run.locator(".bubble.user")).to_contain_text("stream: say hello")
    thoughts = run.locator("details.thoughts")
    expect(thoughts).not_to_have_attribute("open", "")  # collapsed until asked for
    expect(thoughts.locator(".thought-text")).to_have_text("Weighing the greeting")
    expect(page.locator("#chat-prompt")).to_have_value("")  # the prompt left the box once the run started

    gate.set()
    expect(run).to_have_attribute("data-status", "completed")
    expect(run.locator(".answer-text")).to_have_text("Hello from the console.")
    expect(run.locator(".usage")).to_contain_text(f"{CALL_USAGE.total_tokens} tokens")
    thoughts.locator("summary").click()
    expect(thoughts).to_have_attribute("open", "")
    run_id = run.get_attribute("data-run-id")
    assert run_id and run_id.startswith("run_")
    thread = page.input_value("#chat-thread")
    assert thread.startswith("thr_")  # the new thread the run opened is now the chosen one
    record = api(console, "GET", f"/api/agent/runs/{run_id}", "alice")
    assert record["status"] == "completed" and record["threadId"] == thread
    console.screenshot(page, "chat")

    # The same transcript on a narrow window: nothing wider than the window.
    page.set_viewport_size({"width": 420, "height": 800})
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    console.screenshot(page, "chat-narrow")
    page.set_viewport_size({"width": 1280, "height": 800})

    # The runs list shows it, and its timeline is drawn from the event log.
    page.click("nav >> text=Runs")
    row = page.locator(f"#runs-table tr[data-run-id={run_id}]")
    expect(row).to_contain_text("completed")
    row.locator("a").press("Enter")
    timeline = page.locator("#run-detail .timeline li")
    expect(timeline.last).to_contain_text("result completed")
    spans = timeline.evaluate_all("items => items.map(li => [+li.dataset.seq, +li.dataset.lastSeq])")
    assert [n for first, last in spans for n in range(first, last + 1)] == list(range(1, record["lastSeq"] + 1))
    assert timeline.first.inner_text().startswith("#1 status planning")
    # Consecutive deltas are one text; the agent state is a chip, never raw JSON.
    deltas = page.locator("#run-detail .timeline li.ev-delta")
    expect(deltas).to_have_count(1)
    expect(deltas.locator(".text")).to_have_text("Hello from the console.")
    states = page.locator("#run-detail .timeline li.ev-agent_state")
    expect(states.first.locator(".chip")).to_have_attribute("data-state", "thinking")
    assert states.count() >= 1 and all("{" not in t for t in states.all_inner_texts())
    expect(page.locator("#run-detail .timeline pre")).to_have_count(0)
    console.screenshot(page, "runs")


def test_an_approval_decided_from_its_card_resumes_the_run(page: Page, console: Console) -> None:
    open_console(page, console, "bob")
    page.fill("#chat-prompt", "remember: I like green tea")
    page.press("#chat-prompt", "Enter")
    paused = page.locator("#chat-transcript .run").last
    expect(paused).to_have_attribute("data-status", "awaiting_confirmation")
    expect(paused.locator(".approval-card")).to_contain_text('Remember: "I like green tea"')
    expect(paused.locator(".agent-state .chip")).to_have_attribute("data-state", "waiting_on_user")

    page.click("nav >> text=Approvals")
    card = page.locator("#approvals-list .approval-card")
    expect(card).to_have_count(1)
    expect(card.locator(".tool-name")).to_have_text("save_memory")
    expect(card.locator(".preview")).to_have_text('Remember: "I like green tea"')
    expect(card.locator(".reason")).to_contain_text("save_memory has side effects")
    console.screenshot(page, "approvals-pending")
    card.locator("button.approve").focus()
    page.keyboard.press("Enter")  # a real button: the keyboard decides too

    expect(card.locator(".decision")).to_have_text("approved: resume requested")
    expect(card.locator(".chip")).to_have_text("approved")
    resumed = page.locator("#approvals-following .run")
    expect(resumed).to_have_attribute("data-status", "completed")
    tool = resumed.locator(".tool-card[data-tool=save_memory]")
    expect(tool).to_have_attribute("data-result", "completed")
    expect(resumed.locator(".answer-text")).to_have_text("Saved: I like green tea")
    console.screenshot(page, "approvals")

    run_id = resumed.get_attribute("data-run-id")
    record = api(console, "GET", f"/api/agent/runs/{run_id}", "bob")
    assert record["status"] == "completed" and record["toolsExecuted"] == 1
    # Decided and resumed: nothing is waiting any more.
    page.click("#approvals-refresh")
    expect(page.locator("#approvals-list")).to_have_text("Nothing is waiting for a decision.")


def test_a_reload_mid_run_catches_up_from_the_event_log(page: Page, console: Console) -> None:
    gate = console.model.hold("slow")
    open_console(page, console, "carol")
    page.fill("#chat-prompt", "slow: look up my tea")
    page.press("#chat-prompt", "Enter")
    live = page.locator("#chat-transcript .run[data-source=live]")
    expect(live.locator(".tool-card[data-tool=search_memory]")).to_have_attribute("data-result", "completed")
    run_id = live.get_attribute("data-run-id")
    assert run_id
    expect(live).to_have_attribute("data-status", "planning")  # the second model call is still held
    kept = page.evaluate("Object.fromEntries(Object.entries(localStorage))")
    assert f'"runId":"{run_id}"' in kept["console.carol.active"]

    page.reload()
    replayed = page.locator(f"#chat-transcript .run[data-run-id={run_id}]")
    expect(replayed).to_have_attribute("data-source", "event-log")
    # What happened before the reload is drawn again from the log: the prompt and the tool call.
    expect(replayed.locator(".tool-card[data-tool=search_memory]")).to_have_attribute("data-result", "completed")
    expect(replayed.locator(".bubble.user")).to_contain_text("slow: look up my tea")
    expect(replayed).not_to_have_attribute("data-status", "completed")
    console.screenshot(page, "reload-caught-up")

    gate.set()  # the run goes on; the page follows it through the events route
    expect(replayed).to_have_attribute("data-status", "completed")
    expect(replayed.locator(".answer-text")).to_have_text("Finished after the reload.")
    expect(page.locator("#chat-transcript .run")).to_have_count(1)
    seqs = replayed.evaluate("el => el.dataset.lastSeq")
    assert int(seqs) == api(console, "GET", f"/api/agent/runs/{run_id}", "carol")["lastSeq"]
    assert "console.carol.active" not in page.evaluate("Object.keys(localStorage)")  # finished: nothing to resume
    console.screenshot(page, "reload")


def test_api_errors_are_shown_with_code_and_message(page: Page, console: Console) -> None:
    open_console(page, console, "dave")
    page.fill("#chat-thread", "not a valid thread!")
    page.fill("#chat-prompt", "plain: hello")
    page.press("#chat-prompt", "Enter")
    error = page.locator("#chat-errors .error")
    expect(error).to_have_attribute("data-code", "INVALID_REQUEST")
    expect(error.locator(".error-status")).to_have_text("HTTP 400")
    expect(error.locator(".error-message")).to_have_text("invalid request: threadId")
    expect(error).to_have_attribute("role", "alert")
    expect(page.locator("#chat-prompt")).to_have_value("plain: hello")  # nothing lost: fix and resend
    expect(page.locator("#chat-transcript .run")).to_have_count(0)
    console.screenshot(page, "error-chat")
    page.click("#chat-errors .error button.dismiss")
    expect(page.locator("#chat-errors .error")).to_have_count(0)
    page.fill("#chat-thread", "")
    page.fill("#chat-context-type", "nonsense")
    page.press("#chat-prompt", "Enter")
    expect(error).to_have_attribute("data-code", "INVALID_REQUEST")
    expect(error.locator(".error-message")).to_have_text("invalid request: contextType")
    expect(error.locator("details pre")).to_contain_text("Input should be 'project_create'")

    page.click("nav >> text=Usage")
    page.fill("#usage-from", "2026-03-10")
    page.fill("#usage-to", "2026-03-01")
    page.click("#usage-form button[type=submit]")
    usage_error = page.locator("#usage-errors .error")
    expect(usage_error).to_have_attribute("data-code", "INVALID_QUERY")
    expect(usage_error.locator(".error-message")).to_have_text("query parameter from must be before to")
    usage_error.locator("details summary").click()
    expect(usage_error.locator("details pre")).to_contain_text('"field": "from"')
    console.screenshot(page, "error-usage")


def test_usage_shows_tokens_by_group_with_a_chart(page: Page, console: Console) -> None:
    for prompt in ("plain: one", "plain: two"):
        assert api(console, "POST", "/api/agent/run", "erin", {"prompt": prompt})["status"] == "completed"
    open_console(page, console, "erin", view="usage")
    page.click("#usage-form button[type=submit]")
    row = page.locator("#usage-result .usage-table tbody tr")
    expect(row).to_have_count(1)
    cells = row.locator("td")
    expect(cells.nth(1)).to_have_text("2")  # calls
    expect(cells.nth(6)).to_have_text(str(2 * CALL_USAGE.total_tokens))
    operation = cells.first.inner_text()
    bar = page.locator(f"#usage-result svg.chart rect[data-key='{operation}']")
    expect(bar).to_have_count(1)
    expect(page.locator("#usage-result .totals")).to_contain_text("2 model calls")

    page.select_option("#usage-group", "day")
    page.click("#usage-form button[type=submit]")
    expect(page.locator("#usage-result .usage-table tbody tr")).to_have_attribute(
        "data-key", datetime.now(UTC).strftime("%Y-%m-%d"))
    console.screenshot(page, "usage")


def test_integrations_connect_show_status_and_disconnect(page: Page, console: Console) -> None:
    open_console(page, console, "frank", view="integrations")
    rows = page.locator("#integrations-status tbody tr")
    providers = [i["provider"] for i in api(console, "GET", "/api/integrations", "frank")["integrations"]]
    expect(rows).to_have_count(len(providers))
    expect(page.locator("#int-provider option")).to_have_count(len(providers))
    expect(page.locator("#integrations-status tr[data-provider=slack] .chip")).to_have_text("not connected")

    page.select_option("#int-provider", "slack")
    page.fill("#int-access", "bad token")
    page.click("#integrations-form button[type=submit]")
    error = page.locator("#integrations-errors .error")
    expect(error).to_have_attribute("data-code", "INVALID_REQUEST")
    expect(error.locator(".error-message")).to_contain_text("accessToken")

    page.fill("#int-access", "xoxp-console-test")
    page.fill("#int-scopes", "channels:history, chat:write")
    page.fill("#int-team", "T0123")
    page.click("#integrations-form button[type=submit]")
    slack = page.locator("#integrations-status tr[data-provider=slack]")
    expect(slack.locator(".chip")).to_have_text("connected")
    expect(slack).to_contain_text("channels:history, chat:write")
    expect(page.locator("#integrations-errors .error")).to_have_count(0)
    assert "xoxp-console-test" not in page.content()  # the token is never shown again
    stored = api(console, "GET", "/api/integrations/slack", "frank")
    assert stored["connected"] is True and stored["scopes"] == ["channels:history", "chat:write"]
    console.screenshot(page, "integrations")

    slack.locator("button", has_text="Disconnect slack").click()
    expect(slack.locator(".chip")).to_have_text("not connected")
    assert api(console, "GET", "/api/integrations/slack", "frank")["connected"] is False


def test_integrations_list_add_and_remove_a_users_mcp_servers(page: Page, console: Console) -> None:
    """A real MCP server (the official SDK's, Streamable HTTP) that answers only with its token."""
    with serving([sys.executable, str(HTTP_SERVER), "{port}", "mcp-console-token"]) as url:
        open_console(page, console, "mia", view="integrations")
        expect(page.locator("#mcp-status .mcp-none")).to_have_text("No MCP server yet.")

        page.fill("#mcp-name", "bad.name")
        page.fill("#mcp-url", url)
        page.click("#mcp-form button[type=submit]")
        error = page.locator("#mcp-errors .error")
        expect(error).to_have_attribute("data-code", "INVALID_MCP_SERVER_NAME")

        page.fill("#mcp-name", "notes")
        page.fill("#mcp-url", url + "?key=in-the-query")
        page.fill("#mcp-token", "mcp-console-token")
        page.click("#mcp-form button[type=submit]")
        notes = page.locator("#mcp-status tr[data-server=notes]")
        expect(notes.locator(".mcp-url")).to_have_text(url)  # as the API shows it: no query
        expect(notes.locator(".mcp-token")).to_have_text("token set")
        expect(notes.locator("td > .chip")).to_have_text("connected")
        add = notes.locator("li[data-tool=notes_add_note]")
        expect(add.locator("[data-side-effect]")).to_have_text("side effect (idempotent)")
        expect(add.locator(".mcp-tool-description")).to_contain_text("Add a note")
        expect(notes.locator("li[data-tool=notes_list_notes] [data-side-effect]")).to_have_text("read-only")
        expect(notes.locator("li[data-tool=notes_list_notes] .mcp-tool-description")).to_contain_text(
            "The notes kept so far")
        expect(page.locator("#mcp-errors .error")).to_have_count(0)
        content = page.content()
        assert "mcp-console-token" not in content and "in-the-query" not in content

        # Without its token the server refuses to list: the row says so, the view goes on.
        page.fill("#mcp-name", "open")
        page.fill("#mcp-url", url)
        page.click("#mcp-form button[type=submit]")
        unlisted = page.locator("#mcp-status tr[data-server=open]")
        expect(unlisted.locator(".mcp-token")).to_have_text("no token")
        expect(unlisted.locator(".mcp-unavailable")).to_contain_text("tools not available")
        expect(unlisted.locator(".mcp-unavailable")).to_have_attribute("data-error-code", "MCP_AUTH_FAILED")
        expect(unlisted.locator(".mcp-error-code")).to_have_text("MCP_AUTH_FAILED")
        expect(unlisted.locator(".mcp-unavailable")).to_contain_text("HTTP 401")
        expect(notes.locator("li[data-tool]")).to_have_count(2)
        assert [s["name"] for s in api(console, "GET", "/api/integrations/mcp", "mia")["servers"]] == ["notes", "open"]
        assert api(console, "GET", "/api/integrations/mcp", "nina")["servers"] == []  # mia's only
        console.screenshot(page, "integrations-mcp")

        notes.locator("button", has_text="Remove notes").click()
        expect(notes).to_have_count(0)
        expect(unlisted).to_have_count(1)
        assert api(console, "GET", "/api/integrations/mcp/notes", "mia")["connected"] is False


def test_goals_playground_plans_then_finalises(page: Page, console: Console) -> None:
    open_console(page, console, "gina", view="goals")
    page.fill("#goals-message", "I want to learn Kotlin.")
    page.press("#goals-message", "Enter")
    first = page.locator("#goals-log .goals-answer").first
    expect(first).to_have_attribute("data-action", "save_preview")
    expect(first.locator(".reply")).to_contain_text("Here\u2019s a plan based on your message!")
    expect(first.locator(".plan .milestones > li").first).to_be_visible()
    state = page.input_value("#goals-state")
    assert '"step": "plan_generated"' in state and '"proposed_plan"' in state  # sent with the next message

    page.fill("#goals-message", "looks good")
    page.press("#goals-message", "Enter")
    last = page.locator("#goals-log .goals-answer").last
    expect(last).to_have_attribute("data-action", "finalize_goal")
    expect(last.locator(".reply")).to_contain_text("I've created a goal for you:")
    expect(last.locator(".meta")).to_contain_text("state finalized")
    console.screenshot(page, "goals")


def test_a_plan_is_refined_then_confirmed_and_its_tasks_progress(page: Page, console: Console) -> None:
    gate = console.model.hold("plan")
    open_console(page, console, "hana", view="plans")
    page.fill("#plans-prompt", "Tidy my notes")
    page.fill("#plans-deadline", "90")
    page.click("#plans-form button[type=submit]")
    review = page.locator(".review-card")
    expect(review.locator(".plan-tasks > li")).to_have_count(3)
    expect(review.locator("button.confirm")).to_have_text("Confirm version 1")
    session_id = page.locator(".session").get_attribute("data-session-id")
    assert session_id and session_id.startswith("ses_")
    expect(page.locator(".session .countdown")).to_contain_text("left")

    page.fill(".review-card textarea", "also send me a summary")
    page.press(".review-card textarea", "Enter")  # Enter refines
    expect(review.locator("button.confirm")).to_have_text("Confirm version 2")
    expect(review.locator(".plan-tasks > li")).to_have_count(4)
    expect(review.locator(".plan-tasks > li").last).to_contain_text("Follow up: also send me a summary")
    expect(page.locator(".versions li[data-version='2']")).to_contain_text("added task")
    console.screenshot(page, "plans-review")

    review.locator("button.confirm").click()  # confirms exactly version 2
    session = page.locator(".session")
    tasks = session.locator(".tasks > li")
    expect(tasks).to_have_count(4)
    # Task 1 is done (with its ReAct history); task 2 started and its first act is held.
    expect(tasks.nth(0)).to_have_attribute("data-status", "completed")
    expect(tasks.nth(1)).to_have_attribute("data-status", "in_progress")
    expect(tasks.nth(2)).to_have_attribute("data-status", "pending")
    expect(session.locator(".facts .chip").first).to_have_text("executing")
    console.screenshot(page, "plans-executing")

    gate.set()
    expect(session.locator(".facts .chip").first).to_have_text("completed")
    for i in range(4):
        expect(tasks.nth(i)).to_have_attribute("data-status", "completed")
    first = tasks.nth(0)
    first.locator("details.react > summary").click()
    step = first.locator(".react-step").first
    expect(step).to_contain_text("reason: I will look up the notes first.")
    expect(step).to_contain_text("search_memory")
    starts = session.locator(".timeline li.ev-task_start")
    expect(starts).to_have_count(4)
    expect(starts.last).to_contain_text("task 4 of 4: Follow up: also send me a summary")
    expect(session.locator(".timeline li").last).to_contain_text("result completed")
    view = api(console, "GET", f"/api/agent/sessions/{session_id}", "hana")
    assert view["status"] == "completed" and view["plan"]["version"] == 2
    assert [t["status"] for t in view["plan"]["tasks"]] == ["completed"] * 4
    console.screenshot(page, "plans")


def test_a_plan_drafted_in_chat_is_reviewed_and_confirmed_in_plans(page: Page, console: Console) -> None:
    open_console(page, console, "ivan")
    page.fill("#chat-context-type", "general")
    page.fill("#chat-prompt", "draft: tidy my desk")
    page.press("#chat-prompt", "Enter")
    run = page.locator("#chat-transcript .run").last
    expect(run).to_have_attribute("data-status", "completed")
    card = run.locator(".plan-card[aria-label='plan ready for review']")
    expect(run.locator(".plan-card")).to_have_count(1)  # plan_created, then ready for review: one card
    expect(card.locator(".plan-tasks > li")).to_have_count(3)
    expect(run.locator(".answer-text")).to_have_text("The plan is ready for your review.")
    plan_id = card.get_attribute("data-plan-id")
    assert plan_id
    console.screenshot(page, "chat-plan-draft")

    card.get_by_role("link", name="Review, refine or confirm it in Plans").click()
    review = page.locator(f".session[data-session-id={plan_id}] .review-card")
    expect(review.locator("button.confirm")).to_have_text("Confirm version 1")
    review.locator("button.confirm").click()
    session = page.locator(f".session[data-session-id={plan_id}]")
    expect(session.locator(".facts .chip").first).to_have_text("completed")
    expect(session.locator(".tasks > li[data-status=completed]")).to_have_count(3)


def test_a_plan_runs_live_in_the_chat_turn_and_its_approval_is_decided_there(page: Page, console: Console) -> None:
    open_console(page, console, "nora")
    page.fill("#chat-prompt", "plan: save: my live note")
    page.press("#chat-prompt", "Enter")
    run = page.locator("#chat-transcript .run").last
    card = run.locator(".approval-card")
    expect(card.locator(".tool-name")).to_have_text("save_memory")
    expect(card.locator(".meta")).to_contain_text("plan session ses_")
    expect(run.locator(".stream-end")).to_have_count(1)  # one hint, however many follows closed at the pause
    expect(run.locator(".stream-end")).to_have_attribute("data-reason", "plan_awaiting_approval")
    expect(run.locator(".plan-line[data-step-id]").first).to_contain_text("started")
    expect(run).to_have_attribute("data-status", "executing")
    console.screenshot(page, "chat-plan-live-approval")
    card.locator("button.approve").click()
    expect(run).to_have_attribute("data-status", "completed")
    expect(run.locator(".answer-text")).to_have_text("The plan finished.")
    expect(run.locator(".plan-line[data-step-id] .chip-completed").first).to_be_visible()
    expect(run.locator(".tool-card[data-step-id]").first).to_have_attribute("data-result", "completed")
    expect(run.locator("pre.unknown-event")).to_have_count(0)
    assert [m.text for m in console.runtime.users.list_memories("nora")] == ["the plan's note"]


def test_plans_lists_the_users_own_sessions_from_the_server(page: Page, console: Console) -> None:
    """Sessions started elsewhere (a backend, the CLI) are listed with their status; another
    user's are not."""
    mine = api(console, "POST", "/api/agent/sessions", "kim", body={"prompt": "Plan my week"})
    api(console, "POST", "/api/agent/sessions", "lee", body={"prompt": "Someone else's plan"})
    open_console(page, console, "kim", view="plans")
    listed = page.locator("#plans-known li")
    expect(listed).to_have_count(1)
    item = page.locator(f"#plans-known li[data-session-id={mine['sessionId']}]")
    expect(item).to_contain_text("Plan my week")
    expect(item.locator(".chip")).to_have_text(mine["status"])
    item.get_by_role("link", name=mine["sessionId"]).click()
    expect(page.locator(f".session[data-session-id={mine['sessionId']}] .review-card")).to_be_visible()


def _inbox_when_paused(console: Console, uid: str) -> list[dict[str, Any]]:
    """The inline dispatcher executes on its own threads: read the inbox until the session waits."""
    for _ in range(300):
        pending: list[dict[str, Any]] = api(console, "GET", "/api/agent/approvals", uid)["approvals"]
        if pending:
            return pending
        threading.Event().wait(0.1)
    raise AssertionError("the session never waited for an approval")


def test_the_approvals_view_lists_a_plan_sessions_pending_approval_and_approves_it(page: Page,
                                                                                   console: Console) -> None:
    created = api(console, "POST", "/api/agent/sessions", "maya", body={"prompt": "save: my plan note"})
    sid = created["sessionId"]
    api(console, "POST", f"/api/agent/sessions/{sid}/confirm", "maya", body={"planVersion": created["plan"]["version"]})
    [pending] = _inbox_when_paused(console, "maya")
    open_console(page, console, "maya", view="approvals")
    card = page.locator("#approvals-list .approval-card")
    expect(card).to_have_count(1)
    expect(card).to_have_attribute("data-session-id", sid)
    expect(card).to_have_attribute("data-approval-id", pending["approvalId"])
    expect(card.locator(".tool-name")).to_have_text("save_memory")
    expect(card.locator(".preview")).to_have_text('Remember: "the plan\'s note"')
    expect(card.locator(".meta")).to_contain_text(f"plan session {sid} · task t1")
    console.screenshot(page, "approvals-plan")
    card.locator("button.approve").click()
    expect(card.locator(".decision")).to_have_text("approved: resume requested")
    page.locator("#approvals-following").get_by_role("link", name=f"follow {sid} in Plans").click()
    session = page.locator(f".session[data-session-id={sid}]")
    expect(session.locator(".facts .chip").first).to_have_text("completed")
    assert [m.text for m in console.runtime.users.list_memories("maya")] == ["the plan's note"]
    # The sessions list caught up with the status, and the plan's run links to its session.
    expect(page.locator(f"#plans-known li[data-session-id={sid}] .chip")).to_have_text("completed")
    page.click("nav >> text=Runs")
    row = page.locator(f"#runs-table tr[data-run-id={pending['runId']}]")
    expect(row.locator("a.session-link")).to_have_text(f"plan session {sid}")
    row.locator("a").first.click()
    expect(page.locator("#run-detail .facts a.session-link")).to_have_text(f"plan session {sid}")
    # The plan run's log holds the session's events (issue 22): each drawn in words, none as raw JSON.
    timeline = page.locator("#run-detail .timeline")
    expect(timeline.locator("li.ev-plan_result")).to_have_count(1)
    expect(timeline.locator("li.ev-executor_act").first).to_contain_text("save_memory")
    assert "{" not in timeline.inner_text()
    page.click("nav >> text=Approvals")
    expect(page.locator("#approvals-list")).to_have_text("Nothing is waiting for a decision.")


def test_the_sessions_list_refreshes_statuses(page: Page, console: Console) -> None:
    """A session that changes elsewhere (a backend, the CLI) shows its new status without a reload."""
    created = api(console, "POST", "/api/agent/sessions", "nora", body={"prompt": "Plan my day"})
    sid = created["sessionId"]
    open_console(page, console, "nora", view="plans")
    chip = page.locator(f"#plans-known li[data-session-id={sid}] .chip")
    expect(chip).to_have_text("awaiting_confirmation")
    api(console, "POST", f"/api/agent/sessions/{sid}/cancel", "nora", body={"reason": "not today"})
    expect(chip).to_have_text("cancelled")


def test_integrations_show_webhooks_with_deliveries_and_schedules_with_runs(page: Page, console: Console) -> None:
    """Webhooks and schedules in the Integrations view (docs/run-control.md): add both through the
    forms, see a webhook's secret once and a schedule's next run; a schedule's tick starts a run
    that the view lists; remove them."""
    from shared.agent.schedules import Schedules, tick_message

    open_console(page, console, "gina", view="integrations")
    expect(page.locator("#webhooks-status .webhook-none")).to_be_visible()
    page.fill("#webhook-name", "ops")
    page.fill("#webhook-url", "http://127.0.0.1:9/hook")
    page.click("#webhooks-form button[type=submit]")
    row = page.locator("#webhooks-status tr[data-webhook=ops]")
    expect(row.locator(".webhook-events")).to_have_text("run.*")
    expect(page.locator("#webhooks-errors .webhook-secret code")).to_contain_text("whsec_")
    assert api(console, "GET", "/api/agent/webhooks/ops", "gina")["events"] == ["run.*"]

    page.fill("#schedule-name", "brief")
    page.fill("#schedule-cron", "not a cron")
    page.fill("#schedule-prompt", "Brief me")
    page.click("#schedules-form button[type=submit]")
    expect(page.locator("#schedules-errors .error")).to_have_attribute("data-code", "INVALID_CRON")
    page.fill("#schedule-cron", "0 8 * * *")
    page.fill("#schedule-timezone", "Europe/Paris")
    page.click("#schedules-form button[type=submit]")
    schedule = page.locator("#schedules-status tr[data-schedule=brief]")
    expect(schedule.locator(".schedule-prompt")).to_have_text("Brief me")
    expect(schedule.locator(".schedule-details")).to_contain_text("none yet")

    rt = console.runtime
    due = Schedules(rt.services).repo.get("gina", "brief")
    assert due is not None
    rt.router.handle(tick_message(due[0].next_run_at + 60))  # the tick after its next occurrence
    for _ in range(200):
        runs = api(console, "GET", "/api/agent/schedules/brief/runs", "gina")["runs"]
        if runs and runs[0]["status"] == "completed":
            break
        page.wait_for_timeout(50)
    page.reload()
    expect(page.locator("body[data-ready=true]")).to_be_attached()
    expect(schedule.locator(".schedule-runs li")).to_have_count(1)
    expect(schedule.locator(".schedule-runs .chip")).to_have_text("completed")
    console.screenshot(page, "run-control")

    schedule.locator("button", has_text="Remove brief").click()
    expect(page.locator("#schedules-status .schedule-none")).to_be_visible()
    row.locator("button", has_text="Remove ops").click()
    expect(page.locator("#webhooks-status .webhook-none")).to_be_visible()
