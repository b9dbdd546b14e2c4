"""The console's approval card approves with edits (issue 34): "Edit arguments" builds a form from
the tool's schema (GET /api/agent/approvals/{id}); the approval sends the edited arguments and the
side effect runs once, with them."""

from __future__ import annotations

from playwright.sync_api import Locator, Page, expect

from tests.console.conftest import Console, api, open_console


def paused_card(page: Page, prompt: str) -> tuple[Locator, Locator]:
    """Send ``prompt`` in Chat; the paused run and its approval card, its edit form open."""
    page.fill("#chat-prompt", prompt)
    page.press("#chat-prompt", "Enter")
    paused = page.locator("#chat-transcript .run").last
    expect(paused).to_have_attribute("data-status", "awaiting_confirmation")
    card = paused.locator(".approval-card")
    card.locator(".edit-arguments summary").click()
    return paused, card


def test_an_approval_card_edits_the_arguments_before_approving(page: Page, console: Console) -> None:
    open_console(page, console, "erin")
    paused, card = paused_card(page, "remember: I like tea")
    text = card.locator("textarea[name=text]")
    expect(text).to_have_value("I like tea")
    expect(card.locator("textarea[name=tags]")).to_have_count(1)  # every argument of the schema
    text.fill("I like green tea")
    console.screenshot(page, "approval-edit")
    card.locator("button.approve").click()
    expect(card.locator(".decision")).to_have_text("approved: resume requested")
    run_id = paused.get_attribute("data-run-id")
    assert run_id
    detail = api(console, "GET", f"/api/agent/approvals/{card.get_attribute('data-approval-id')}", "erin")
    assert detail["arguments"] == {"text": "I like green tea"} and detail["originalArguments"] == {"text": "I like tea"}
    expect(paused).to_have_attribute("data-status", "completed")
    assert [m.text for m in console.runtime.users.list_memories("erin")] == ["I like green tea"]
    # a schema failure is refused on the card and nothing runs
    _, card = paused_card(page, "remember: I like coffee")
    card.locator("textarea[name=tags]").fill('"not a list"')
    card.locator("button.approve").click()
    expect(card.locator(".errors")).to_contain_text("arguments.tags")
    assert [m.text for m in console.runtime.users.list_memories("erin")] == ["I like green tea"]
