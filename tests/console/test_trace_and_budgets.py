"""The console shows budget approvals and a run's trace (issue 30), in headless Chromium: a run
stopped at its money budget waits in Approvals as a budget card (limit, spend, the limit raising
sets); "Raise to" lets it go on where it stopped, "Stop here" ends it BUDGET_EXCEEDED with its work
kept; the run's page draws its trace as a waterfall: one invoke_agent row per stretch of work,
the waits between them, its model call with tokens and cost and its tool call."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Locator, Page, expect

from tests.console.conftest import Console, api, open_console, served

PRICE = (("console-scripted", 1.0, 0.25, 2.0),)
"""The console model priced (USD per million tokens), so money budgets apply to it."""


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    """conftest's dev app, its model priced and its calls capped at 200 output tokens."""
    with served(tmp_path_factory.mktemp("budget-console"), model_prices=PRICE, model_max_output_tokens=200) as app:
        yield app


def pending_card(page: Page) -> Locator:
    """The one pending card of the Approvals view, once it is there."""
    page.click("#approvals-refresh")
    card = page.locator("#approvals-list .approval-card")
    expect(card).to_have_count(1)
    return card


def test_budget_approvals_raise_or_stop_and_the_trace_spans_the_pauses(page: Page, console: Console) -> None:
    started = api(console, "POST", "/api/agent/run", "bea", {"prompt": "remember: I like tea", "budgetUsd": 1e-7})
    run_id = started["runId"]
    assert started["status"] == "awaiting_confirmation"
    open_console(page, console, "bea", "approvals")

    # 1. The budget stopped the run before its first model call: a budget card.
    card = pending_card(page)
    expect(card).to_have_class("card approval-card budget-card")
    expect(card.locator(".budget-scope")).to_contain_text("this run's budget")
    expect(card.locator(".budget-limit")).to_have_text("$0.0000")
    expect(card.locator(".edit-arguments")).to_have_count(0)  # a budget takes no edits
    proposed = card.locator(".budget-proposed").inner_text()
    expect(card.locator("button.approve")).to_have_text(f"Raise to {proposed}")
    console.screenshot(page, "budget-approval")
    card.locator("button.approve").click()
    expect(card.locator(".decision")).to_contain_text("approved")

    # 2. Raised: the run made that very call (save_memory, which waits for its own approval).
    card = pending_card(page)
    expect(card.locator(".tool-name")).to_have_text("save_memory")
    expect(card).not_to_have_class("card approval-card budget-card")
    card.locator("button.approve").click()
    expect(card.locator(".decision")).to_contain_text("approved")

    # 3. The memory was saved; the next call has no room again: stop here.
    card = pending_card(page)
    expect(card.locator(".tool-name")).to_have_text("budget_increase")
    expect(card.locator("button.reject")).to_have_text("Stop here")
    card.locator("button.reject").click()
    expect(card.locator(".decision")).to_contain_text("rejected")

    # 4. The run's page: failed BUDGET_EXCEEDED with its work kept, and its trace.
    page.goto(f"{console.url}#/runs/{run_id}")
    detail = page.locator("#run-detail")
    expect(detail.locator(".facts dd .chip").first).to_have_text("failed")
    expect(detail).to_contain_text("BUDGET_EXCEEDED")
    assert [m.text for m in console.runtime.users.list_memories("bea")] == ["I like tea"]
    waterfall = detail.locator(".waterfall")
    expect(waterfall.locator("li[data-kind=invocation]")).to_have_count(4)  # start, raised, approved, stopped
    expect(waterfall.locator("li[data-kind=wait]")).to_have_count(3)
    expect(waterfall.locator("li[data-kind=wait] .span-name")).to_have_text(
        ["awaiting budget approval", "awaiting approval", "awaiting budget approval"])
    model = waterfall.locator("li[data-kind=model]")
    expect(model).to_have_count(1)  # the one call the budgets let through
    expect(model.locator(".span-name")).to_have_text("chat console-scripted")
    expect(model.locator(".span-info")).to_contain_text("100 in · 20 out tokens")
    expect(model.locator(".span-info")).to_contain_text("$0.00014")
    tool = waterfall.locator("li[data-kind=tool]")
    expect(tool.locator(".span-name")).to_have_text("execute_tool save_memory")
    expect(detail.locator(".trace-summary")).to_contain_text("4 invocations")
    # Rows are in start order and the model call sits in the second invocation.
    kinds = waterfall.locator("li").evaluate_all("(rows) => rows.map((r) => r.dataset.kind)")
    assert kinds[:3] == ["invocation", "wait", "invocation"] and kinds.index("model") > 2, kinds
    assert model.get_attribute("data-parent-id") == "inv-2"
    bars = waterfall.locator(".bar").evaluate_all("(bars) => bars.map((b) => b.getBoundingClientRect().width)")
    assert len(bars) == 9 and all(w > 0 for w in bars), bars
    trace = api(console, "GET", f"/api/agent/runs/{run_id}/trace", "bea")
    assert trace["inputTokens"] == 100 and trace["outputTokens"] == 20
    console.screenshot(page, "run-trace")
