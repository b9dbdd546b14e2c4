"""``web_fetch`` and ``google_web_search`` as tools: through the registry, and through the agent loop
with the real google-genai SDK against the fake Gemini server (grounding metadata, usage ledger).

The web server is on loopback, which the SSRF guard refuses: these tests allowlist 127.0.0.1 with
the ``web_fetch_allow_hosts`` setting (``WEB_FETCH_ALLOW_HOSTS``, tests and local development only).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shared.config import Settings
from shared.durable.dispatcher import RecordingDispatcher
from shared.errors import ToolError
from shared.models.gemini import GeminiModel
from shared.models.offline import LABEL, OfflineModel
from shared.models.scripted import ScriptedModel
from shared.runtime import Runtime
from shared.state.docstore import DocStore
from shared.state.records import UsageEntry, UserRecord
from shared.state.sqlite_docstore import SqliteDocStore
from shared.state.users_repo import UsersRepo
from shared.tools import web_tools
from shared.tools.context import ToolContext
from shared.tools.registry import ToolArgsError, ToolRegistry
from tests.connectors.loop_support import start
from tests.connectors.tool_support import registry_fixture, run, tool
from tests.connectors.web_pages import PageServer
from tests.fakes.fake_gemini import Fail, FakeGemini, Reply, call, grounding, usage

SOURCES = (("python.org", "https://vertexaisearch.cloud.google.com/grounding-api-redirect/abc"),
           ("docs.python.org", "https://vertexaisearch.cloud.google.com/grounding-api-redirect/def"))


registry = registry_fixture(web_tools)


@pytest.fixture
def web() -> Iterator[PageServer]:
    with PageServer() as server:
        yield server


@pytest.fixture
def users(tmp_path: Path) -> Iterator[UsersRepo]:
    store = SqliteDocStore(str(tmp_path / "state.sqlite3"))
    yield UsersRepo(store)
    store.close()


def context(users: UsersRepo, *, settings: Settings | None = None, **kwargs: Any) -> ToolContext:
    return ToolContext(uid="alice", run_id="run_1", action_id="act_1", users=users,
                       settings=settings or Settings(web_fetch_allow_hosts=("127.0.0.1",)), **kwargs)


def test_both_are_read_only(registry: ToolRegistry) -> None:
    assert [(t.name, t.side_effect) for t in registry] == [("web_fetch", False), ("google_web_search", False)]
    declared = {d.name: d.parameters for d in registry.declarations()}
    assert declared["web_fetch"]["required"] == ["url"] and declared["google_web_search"]["required"] == ["query"]
    with pytest.raises(ToolArgsError, match="query: String should have at least 1 character"):
        tool(registry, "google_web_search").validate({"query": "   "})
    with pytest.raises(ToolArgsError, match="url: String should have at most 2048 characters"):
        tool(registry, "web_fetch").validate({"url": "https://example.com/" + "a" * 2048})


# ---- web_fetch ---------------------------------------------------------------------------------------

def test_web_fetch_returns_text_in_windows(registry: ToolRegistry, web: PageServer, users: UsersRepo) -> None:
    paragraphs = "".join(f"<p>paragraph {i:05d} {'x' * 80}</p>" for i in range(200))
    web.page("/long", f"<html><head><title>Long read</title></head><body>{paragraphs}</body></html>")
    web.redirect("/moved", "/long")
    ctx = context(users)
    first = run(registry, "web_fetch", ctx, {"url": web.url("/moved")})
    assert (first["url"], first["title"], first["status"], first["redirectedFrom"]) == (
        web.url("/long"), "Long read", 200, web.url("/moved"))
    assert len(first["text"]) == web_tools.MAX_TEXT_CHARS and first["text"].startswith("paragraph 00000")
    assert first["nextOffset"] == web_tools.MAX_TEXT_CHARS
    assert first["note"] == (f"showing characters 0-12000 of {first['totalChars']}; call again with offset=12000 "
                             "to read on")
    rest = run(registry, "web_fetch", ctx, {"url": web.url("/long"), "offset": first["nextOffset"]})
    assert rest["offset"] == 12000 and first["text"] + rest["text"] == run(
        registry, "web_fetch", ctx, {"url": web.url("/long"), "offset": 0})["text"] + rest["text"]
    assert rest["text"].endswith("x" * 80) and "nextOffset" not in rest


def test_web_fetch_refusals_are_tool_errors(registry: ToolRegistry, web: PageServer, users: UsersRepo) -> None:
    web.page("/p", "<p>hi</p>")
    strict = context(users, settings=Settings())  # no allowlist: loopback is refused
    with pytest.raises(ToolError, match=r"port \d+ is refused"):
        run(registry, "web_fetch", strict, {"url": web.url("/p")})
    with pytest.raises(ToolError, match=r"169\.254\.169\.254 is a cloud metadata address"):
        run(registry, "web_fetch", strict, {"url": "http://169.254.169.254/computeMetadata/v1/"})
    assert web.hits == []


def test_web_fetch_never_outlives_the_callers_deadline(registry: ToolRegistry, web: PageServer,
                                                       users: UsersRepo) -> None:
    web.slow("/slow", size=100, every_s=0.05)
    spent = context(users, deadline=time.monotonic() - 1)
    with pytest.raises(ToolError, match="no time is left for a fetch"):
        run(registry, "web_fetch", spent, {"url": web.url("/slow")})
    assert web.hits == []
    # WEB_FETCH_TIMEOUT_S is 20 s, but the caller has well under a second left.
    nearly = context(users, deadline=time.monotonic() + 0.3)
    assert nearly.time_left(20.0) <= 0.3
    with pytest.raises(ToolError, match="still sending after the time limit"):
        run(registry, "web_fetch", nearly, {"url": web.url("/slow")})


def test_web_fetch_size_setting(registry: ToolRegistry, web: PageServer, users: UsersRepo) -> None:
    web.raw("/big", b"z" * 4000, "text/plain")
    ctx = context(users, settings=Settings(web_fetch_allow_hosts=("127.0.0.1",), web_fetch_max_bytes=1500))
    out = run(registry, "web_fetch", ctx, {"url": web.url("/big")})
    assert out["text"] == "z" * 1500 and out["note"] == "the page is larger than 1500 bytes; only its start was read"


# ---- google_web_search -------------------------------------------------------------------------------

def test_search_through_the_sdk_returns_answer_sources_and_records_usage(
        registry: ToolRegistry, fake_gemini: FakeGemini, users: UsersRepo) -> None:
    fake_gemini.push(Reply.text("Python 3.14 was released in October 2025.", usage=usage(prompt=12, output=9),
                                grounding=grounding(*SOURCES, queries=["python latest release"])))
    entries: list[UsageEntry] = []
    settings = fake_gemini.settings()
    with GeminiModel(settings) as model:
        ctx = context(users, settings=settings, model=lambda: model, usage=entries.append)
        out = run(registry, "google_web_search", ctx, {"query": "latest Python release"})
    assert out == {"query": "latest Python release", "answer": "Python 3.14 was released in October 2025.",
                   "sources": [{"title": t, "url": u} for t, u in SOURCES],
                   "searchQueries": ["python latest release"]}
    [sent] = fake_gemini.requests
    assert (sent.method, sent.google_search) == ("generateContent", True)
    assert sent.body["contents"] == [{"role": "user", "parts": [{"text": "latest Python release"}]}]
    assert "Google Search" in sent.body["systemInstruction"]["parts"][0]["text"]
    [entry] = entries
    assert (entry.component, entry.operation_type, entry.unit_kind, entry.unit_id, entry.uid) == (
        "web_search", "executor", "run", "run_1", "alice")
    assert (entry.outcome, entry.usage.input_tokens, entry.usage.output_tokens, entry.usage.requests) == (
        "ok", 12, 9, 1)
    assert entry.model == "fake-gemini-3"
    fake_gemini.assert_complete()


@pytest.mark.parametrize(("model", "queries", "fee"), [
    ("gemini-3-flash-preview", ["python release", "", "python release", "python 3.14 date"], 2 * 0.014),
    ("gemini-2.5-flash", ["python release", "python 3.14 date"], 0.035),
    ("gemini-2.5-flash", [], 0.0),
])
def test_a_searchs_cost_has_google_searchs_own_fee(registry: ToolRegistry, fake_gemini: FakeGemini, users: UsersRepo,
                                                  model: str, queries: list[str], fee: float) -> None:
    """Grounding with Google Search is billed beside the tokens (docs/usage.md, "Estimated cost"):
    Gemini 3 per search query it ran (the distinct, non-empty ones), Gemini 2.5 per grounded
    prompt (one that searched). The ledger entry's cost (so the run's ``costUsd``) has it."""
    from shared.usage.meter import estimate_cost

    fake_gemini.push(Reply.text("October 2025.", usage=usage(prompt=100, output=50), model_version=model,
                                grounding=grounding(*SOURCES, queries=queries)))
    entries: list[UsageEntry] = []
    settings = fake_gemini.settings()
    with GeminiModel(settings) as gemini:
        run(registry, "google_web_search", context(users, settings=settings, model=lambda: gemini,
                                                   usage=entries.append), {"query": "latest Python release"})
    [entry] = entries
    tokens = estimate_cost(settings, model, entry.usage)
    assert tokens > 0 and entry.cost_usd == pytest.approx(tokens + fee, abs=1e-9)


def test_search_failures_are_recorded_and_told(registry: ToolRegistry, fake_gemini: FakeGemini,
                                               users: UsersRepo) -> None:
    fake_gemini.push(Fail(400, "Search grounding is not supported for this model"))
    entries: list[UsageEntry] = []
    settings = fake_gemini.settings()
    with GeminiModel(settings) as model:
        ctx = context(users, settings=settings, model=lambda: model, usage=entries.append)
        with pytest.raises(ToolError, match=r"google_web_search failed: Gemini API error 400 .*not supported"):
            run(registry, "google_web_search", ctx, {"query": "anything"})
    assert [(e.outcome, e.error_code, e.component) for e in entries] == [("error", "MODEL_ERROR", "web_search")]


def test_a_retried_search_counts_its_requests(registry: ToolRegistry, fake_gemini: FakeGemini,
                                              users: UsersRepo) -> None:
    fake_gemini.push(Fail(503), Reply.text("An answer.", grounding=grounding(SOURCES[0])))
    entries: list[UsageEntry] = []
    settings = fake_gemini.settings()
    with GeminiModel(settings, backoff_initial_s=0.01) as model:
        ctx = context(users, settings=settings, model=lambda: model, usage=entries.append)
        out = run(registry, "google_web_search", ctx, {"query": "q"})
    assert out["sources"] == [{"title": SOURCES[0][0], "url": SOURCES[0][1]}]
    assert [e.usage.requests for e in entries] == [2]


def test_an_ungrounded_answer_says_so(registry: ToolRegistry, fake_gemini: FakeGemini, users: UsersRepo) -> None:
    fake_gemini.push(Reply.text("I could not find anything."))
    settings = fake_gemini.settings()
    with GeminiModel(settings) as model:
        out = run(registry, "google_web_search", context(users, settings=settings, model=lambda: model),
                  {"query": "q"})
    assert out["sources"] == [] and "without sources" in out["note"]


def test_offline_and_unsupported_models(registry: ToolRegistry, users: UsersRepo) -> None:
    entries: list[UsageEntry] = []
    offline = run(registry, "google_web_search", context(users, model=OfflineModel, usage=entries.append),
                  {"query": "weather in Paris"})
    assert offline["available"] is False and offline["sources"] == []
    assert offline["answer"].startswith(LABEL) and "Web search is unavailable offline" in offline["answer"]
    assert [e.model for e in entries] == ["offline"]
    with pytest.raises(ToolError, match=r"not available: this runtime's model \(scripted-model\) cannot search"):
        run(registry, "google_web_search", context(users, model=lambda: ScriptedModel([])), {"query": "q"})
    with pytest.raises(ToolError, match=r"\(none\) cannot search"):
        run(registry, "google_web_search", context(users), {"query": "q"})


# ---- through the agent loop --------------------------------------------------------------------------

def test_a_run_searches_and_fetches_without_approval_and_the_ledger_has_every_call(
        fake_gemini: FakeGemini, web: PageServer, store: DocStore) -> None:
    web.page("/release", "<html><head><title>Python 3.14</title></head><body><p>Released 7 Oct 2025.</p>"
                         "</body></html>")
    fake_gemini.push(
        Reply([call("google_web_search", {"query": "python 3.14 release date"})]),
        Reply.text("Python 3.14 was released on 7 October 2025.", grounding=grounding(*SOURCES)),
        Reply([call("web_fetch", {"url": web.url("/release")})]),
        Reply.text("It was released on 7 October 2025."),
    )
    settings = fake_gemini.settings(Settings(state_backend="sqlite", auth_mode="local", dispatcher="none",
                                             run_deadline_s=30.0, web_fetch_allow_hosts=("127.0.0.1",)))
    with GeminiModel(settings) as model:
        rt = Runtime(settings, store=store, model=model, dispatcher=RecordingDispatcher())
        rt.users.put_user(UserRecord(uid="alice", trust_level="supervised"))
        result = start(rt, "When was Python 3.14 released? Check the release page.")

    assert result.status == "completed" and result.approval is None
    search, fetch = rt.runs.list_actions(result.run_id)
    assert (search.tool, search.status, search.side_effect) == ("google_web_search", "completed", False)
    assert search.result is not None and search.result["sources"][0]["title"] == "python.org"
    assert (fetch.tool, fetch.status) == ("web_fetch", "completed")
    assert fetch.result is not None and fetch.result["text"] == "Released 7 Oct 2025."
    # The loop's requests declare both tools; only the search call enables Google Search.
    assert [(r.method, r.google_search) for r in fake_gemini.requests] == [
        ("streamGenerateContent", False), ("generateContent", True), ("streamGenerateContent", False),
        ("streamGenerateContent", False)]
    told = fake_gemini.requests[2].body["contents"][-1]["parts"][0]["functionResponse"]["response"]
    assert told["answer"] == "Python 3.14 was released on 7 October 2025."
    ledger = rt.usage.for_unit("alice", result.run_id)
    assert sorted((e.component, e.operation_type) for e in ledger) == [
        ("loop", "planner_stream")] * 3 + [("web_search", "executor")]
    fake_gemini.assert_complete()


def test_settings_carry_the_web_limits() -> None:
    s = dataclasses.replace(Settings(), web_fetch_timeout_s=5.0, web_fetch_max_bytes=10)
    assert (s.web_fetch_timeout_s, s.web_fetch_max_bytes, s.web_fetch_allow_hosts) == (5.0, 10, ())


def test_a_searchs_reserved_maximum_counts_googles_fee() -> None:
    """What a search reserves against the budgets counts the fee too: ``SEARCH_QUERIES_RESERVED``
    queries on Gemini 3, one grounded prompt on Gemini 2.5, nothing on a model without a search price."""
    from shared.usage.budget import SEARCH_QUERIES_RESERVED, search_max_cost

    s = Settings(model_prices=(("gemini-3-flash-preview", 0.0, 0.0, 0.0), ("gemini-2.5-flash", 0.0, 0.0, 0.0),
                               ("custom", 0.0, 0.0, 0.0)))
    assert search_max_cost(s, "gemini-3-flash-preview", "q") == pytest.approx(SEARCH_QUERIES_RESERVED * 0.014)
    assert search_max_cost(s, "gemini-2.5-flash", "q") == pytest.approx(0.035)
    assert search_max_cost(s, "custom", "q") == 0.0
