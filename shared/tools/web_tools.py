"""The web tools of seed 004's coding agent, both read-only (no approval): ``web_fetch`` and
``google_web_search``.

- ``web_fetch(url)`` reads a public page as text through ``shared.connectors.web`` (SSRF rules,
  2 MiB read limit, ``WEB_FETCH_TIMEOUT_S`` and never more than the caller's time left). Long texts
  are returned in windows of ``MAX_TEXT_CHARS`` characters (``offset`` reads on).
- ``google_web_search(query)`` is one model call with Gemini's built-in Google Search grounding:
  the answer and the pages it rests on. The call is charged to the unit through ``ctx.usage`` (its
  ``costUsd`` and usage, and a usage-ledger entry, component ``web_search``, operation type
  ``executor``, in the step's commit) and first checked at its maximum against the run's budget and
  reserved against the user's caps through ``ctx.room`` (no room: not made, told).

Every refusal or failure is a ``ToolError``: the model is told why and can try something else.
"""

from __future__ import annotations

import logging
from typing import Any

from pydantic_core import core_schema

from shared.errors import ToolError
from shared.tools.constrained import Constrained as _Constrained
from shared.tools.context import ToolContext
from shared.tools.registry import ToolRegistry

log = logging.getLogger("agent_runtime.tools")

MAX_TEXT_CHARS = 12_000
MAX_URL_CHARS = 2048
MAX_QUERY_CHARS = 500


class Url(_Constrained, str):
    # Only shape here: the SSRF rules run in the tool, so a refused URL is told to the model (which
    # can pick another) instead of failing the whole run as invalid arguments.
    schema = core_schema.str_schema(min_length=1, max_length=MAX_URL_CHARS, strip_whitespace=True)
    json = {"type": "string", "maxLength": MAX_URL_CHARS, "description": "An http(s) URL."}


class SearchTerms(_Constrained, str):
    schema = core_schema.str_schema(min_length=1, max_length=MAX_QUERY_CHARS, strip_whitespace=True)
    json = {"type": "string", "minLength": 1, "maxLength": MAX_QUERY_CHARS}


def register(registry: ToolRegistry) -> None:
    @registry.tool(side_effect=False)
    def web_fetch(ctx: ToolContext, url: Url, offset: int = 0) -> dict[str, Any]:
        """Fetch a public web page and return its readable text (Markdown: headings, lists, code and links kept).

        Args:
            url: The page's http or https URL.
            offset: Character offset to start from, to read on in a long page (a previous call's nextOffset).
        """
        from shared.connectors.web import WebFetcher

        s = ctx.settings
        budget = ctx.time_left(s.web_fetch_timeout_s)
        if budget <= 0:
            raise ToolError("web_fetch: no time is left for a fetch")
        page = WebFetcher(allow_hosts=s.web_fetch_allow_hosts, max_bytes=s.web_fetch_max_bytes).fetch(
            url, timeout_s=budget)
        start = max(0, offset)
        window = page.text[start:start + MAX_TEXT_CHARS]
        out: dict[str, Any] = {"url": page.final_url, "status": page.status, "contentType": page.content_type}
        if page.title:
            out["title"] = page.title
        if page.redirects:
            out["redirectedFrom"] = page.url
        out["text"] = window
        out["totalChars"] = len(page.text)
        notes: list[str] = []
        end = start + len(window)
        if start > 0:
            out["offset"] = start
        if end < len(page.text):
            out["nextOffset"] = end
            notes.append(f"showing characters {start}-{end} of {len(page.text)}; call again with offset={end} "
                         "to read on")
        elif start >= len(page.text) and page.text:
            notes.append(f"offset {start} is past the end of the text ({len(page.text)} characters)")
        if page.truncated:
            notes.append(f"the page is larger than {s.web_fetch_max_bytes} bytes; only its start was read")
        if notes:
            out["note"] = "; ".join(notes)
        return out

    @registry.tool(side_effect=False)
    def google_web_search(ctx: ToolContext, query: SearchTerms) -> dict[str, Any]:
        """Search the web with Google and get a short answer with its sources (title and URL of each page).

        Args:
            query: What to find out, as a question or search terms.
        """
        from shared.usage.meter import WEB_SEARCH, MeteredCall, metered_search

        model = ctx.model() if ctx.model is not None else None
        if model is None or not callable(getattr(model, "grounded_search", None)):
            name = getattr(model, "name", "none")
            raise ToolError(f"google_web_search is not available: this runtime's model ({name}) cannot search")
        budget = ctx.time_left(ctx.settings.model_timeout_s)
        if budget <= 0:
            raise ToolError("google_web_search: no time is left for a search")
        call = MeteredCall(uid=ctx.uid, unit_kind=ctx.unit_kind, unit_id=ctx.run_id, component=WEB_SEARCH,
                           operation_type="executor")
        _check_room(ctx, model.name, query)
        metered = metered_search(model, query, call, ctx.settings, timeout_s=budget)
        if ctx.usage is not None:
            try:
                ctx.usage(metered.entry)
            except Exception:  # metering must never break the tool
                log.exception("usage entry could not be recorded", extra={"fields": {"unitId": ctx.run_id}})
        if metered.error is not None:
            raise ToolError(f"google_web_search failed: {metered.error}")
        answer = metered.answer
        assert answer is not None
        out: dict[str, Any] = {"query": query, "answer": answer.text,
                               "sources": [{"title": src.title, "url": src.uri} for src in answer.sources]}
        if answer.queries:
            out["searchQueries"] = answer.queries
        if not answer.available:
            out["available"] = False
        elif not answer.sources:
            out["note"] = "the answer came without sources (Google Search found nothing to ground it on)"
        return out


def _check_room(ctx: ToolContext, model: str, query: str) -> None:
    """Check the search's maximum cost against the run's budget and the user's money caps
    (docs/budgets.md, "Other model calls"), reserving it against the caps until the step's commit.
    No room: a ``ToolError`` telling the model the search was not made and why (the run's next model
    call meets the same limit, its maximum being at least the search's, and pauses for a budget approval)."""
    if ctx.room is None:
        return
    from shared.usage.budget import search_max_cost

    over = ctx.room(search_max_cost(ctx.settings, model, query))
    if over is not None:
        raise ToolError(f"google_web_search: BUDGET_EXCEEDED: {over.situation()} The search was not made.")


__all__ = ["SearchTerms", "Url", "register"]
