"""Issue 19: the agent works with any host that speaks mvp-0.2, not only the reference host.

Both planners (rules; LLM through the real google-genai SDK against the fake Gemini server) book
on both hosts, whose screens share no layout, also through issue 12's faults; the rules planner
finds a movie the browse screen does not list through the search tool it picks from the host's
schemas. Every session here also
passes ``check_session``: valid frames, every tool.call offered by the current toolSchema with a
concrete reason, never two in flight, a complete log.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hostagent.llm_planner import build_llm_planner
from hostagent.screen import read_screen
from shared.models.gemini import GeminiModel
from tests.fakes.fake_gemini import FakeGemini, Reply, text
from tests.hostagent.support import HOSTS, UPDATE_TIMEOUT_S, assert_clean, run
from tests.hostagent.test_llm_planner import GOAL as LLM_GOAL
from tests.hostagent.test_llm_planner import _context_of, _first_user_texts, booking_brain


@pytest.mark.parametrize("host", HOSTS)
def test_the_llm_planner_books_on_each_host_from_the_normalised_screen(
        tmp_path: Path, host: str, fake_gemini: FakeGemini, gemini: GeminiModel) -> None:
    fake_gemini.handler = lambda r: Reply([text(json.dumps(booking_brain(_context_of(_first_user_texts(r)))))])
    session = run(tmp_path, host=host, goal=LLM_GOAL, planner=build_llm_planner(gemini))
    assert session.result.outcome == "completed" and session.result.exit_code == 0
    assert_clean(session)  # and check_session (in run): valid frames, offered tools, reasons, single flight
    assert [c[0] for c in session.calls()] == ["select_movie", "select_showtime", "select_seats", "enter_contact",
                                               "confirm_booking"]
    assert session.booked.movie == "Inside Out 2" and session.booked.reference is not None
    assert session.booked.seats == 2 and session.booked.name == "Ada Lovelace"
    fake_gemini.assert_complete()
    # The model saw the same normalised view on both hosts, never the host's raw uiSpec.
    contexts = [_context_of(_first_user_texts(r)) for r in fake_gemini.requests]
    assert all("uiSpec" not in c for c in contexts)
    seats = next(c for c in contexts if c["stage"] == "seats")["screen"]
    assert {"id", "available"} == set(seats["seats"][0]) and seats["showtime"]["date"] == "2026-07-01"


# Each fault, and the codes the agent logs (its recoveries, the frames it refused) when it meets it.
LLM_FAULTS = {"drop_state_update:select_movie": ["TIMEOUT_STATE_UPDATE"],
              "delay_state_update:select_showtime": ["TIMEOUT_STATE_UPDATE"],
              "unknown_tool_after_schema_change": ["UNKNOWN_TOOL"],
              "tool_execution_failed:confirm_booking:2": ["TOOL_EXECUTION_FAILED"] * 2,
              "invalid_params_first:enter_contact": ["INVALID_PARAMS"],
              "malformed_frame:select_showtime": ["FRAME_REFUSED", "INVALID_MESSAGE"],
              "wrong_version:select_seats": ["FRAME_REFUSED", "INVALID_MESSAGE"]}


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize("fault", LLM_FAULTS, ids=[f.split(":")[0] for f in LLM_FAULTS])
def test_the_llm_planner_recovers_from_issue_12_faults_on_each_host(
        tmp_path: Path, host: str, fault: str, fake_gemini: FakeGemini, gemini: GeminiModel) -> None:
    fake_gemini.handler = lambda r: Reply([text(json.dumps(booking_brain(_context_of(_first_user_texts(r)))))])
    session = run(tmp_path, host=host, goal=LLM_GOAL, planner=build_llm_planner(gemini), fault_specs=[fault],
                  update_timeout_s=UPDATE_TIMEOUT_S)  # the timer a dropped or held update fires
    assert session.result.outcome == "completed", session.result
    assert session.booked.movie == "Inside Out 2" and session.booked.reference is not None
    met = [r["code"] for r in session.records if r["kind"] in ("recovery", "error")]
    assert sorted(met) == LLM_FAULTS[fault]  # the fault was met, recovered from (booked), and nothing else


def test_the_rules_planner_finds_an_unlisted_movie_through_the_search_tool(tmp_path: Path) -> None:
    # The alt host's browse screen lists nothing until a search; the goal gives no date (so no
    # date search happens by itself): only the search tool, chosen from the schemas, finds the film.
    goal = "Book 2 seats for Oppenheimer in the evening, name Grace Hopper, email grace@example.com"
    session = run(tmp_path, host="alt", goal=goal, fault_specs=["hide_listing"])
    assert session.result.outcome == "completed"
    browse = session.received("snapshot.state")[0]["payload"]  # what the agent saw first: no list at all
    assert browse["stage"] == "browse" and read_screen(browse["uiSpec"]).movies == []
    assert "Oppenheimer" not in json.dumps(browse["uiSpec"]) and "film-opp" not in json.dumps(browse["uiSpec"])
    first, *rest = session.calls()
    assert first == ("search_movies", {"query": "Oppenheimer"})
    assert rest[0] == ("select_movie", {"movieId": "film-opp"})
    assert session.booked.movie == "Oppenheimer" and session.booked.reference is not None
    search = session.sent("tool.call")[0]["payload"]["reason"]
    assert "the screen lists no movies" in search and "search" in search
    assert not [e for e in session.sent("agent.message") if e["payload"].get("kind") == "question"]


def test_a_movie_no_search_finds_is_asked_about_then_blocked(tmp_path: Path) -> None:
    session = run(tmp_path, host="alt", goal="Book 2 seats for Casablanca tonight", fault_specs=["hide_listing"],
                  host_kwargs={"user_profile": None}, question_timeout_s=1.0)
    assert session.calls() == [("search_movies", {"query": "Casablanca"})]
    question = next(e for e in session.sent("agent.message") if e["payload"].get("kind") == "question")
    assert question["payload"]["text"] == "Which movie would you like to see?"  # no empty "On offer: ."
    assert session.result.outcome == "no_answer" and session.result.exit_code == 6
