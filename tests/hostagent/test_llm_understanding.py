"""Issue 32 with the LLM planner, through the real google-genai SDK against the fake Gemini server:
free-form answers from the corpus and goal changes mid-session, on both hosts, like the rules
planner (test_understanding.py). The fake model answers as a competent model would from the context
the planner sends it: the normalised screen, the conversation and the agent's reading of it
(``understood``), so these tests show that reading reaching the model and the loop's question policy
holding for any planner.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hostagent.llm_planner import build_llm_planner
from hostagent.rules_planner import choose_seats
from hostagent.screen import Seat
from hostagent.understanding import MAX_UNHELPFUL_ANSWERS
from shared.models.gemini import GeminiModel
from tests.fakes.fake_gemini import FakeGemini, Received, Reply, text
from tests.hostagent.corpus import CASES, CONTACT_QUESTION, DEFAULT_GOAL
from tests.hostagent.support import HOSTS, Session, run
from tests.hostagent.test_llm_planner import _context_of, _first_user_texts

GOAL = DEFAULT_GOAL.replace("Inception", "Dune")  # neither simulated cinema shows Inception
Brain = Callable[[dict[str, Any]], dict[str, Any]]


def _answer(action: dict[str, Any], expected: str | None = None) -> dict[str, Any]:
    return {"currentStage": "", "remainingSteps": [], "confidence": 0.8, "expectedStage": expected,
            "nextAction": action}


def _call(name: str, params: dict[str, Any], reason: str, expected: str | None) -> dict[str, Any]:
    return _answer({"type": "tool.call", "tool": name, "params": params, "reason": reason}, expected)


def _say(kind: str, words: str, reason: str) -> dict[str, Any]:
    return _answer({"type": "agent.message", "kind": kind, "text": words, "reason": reason})


def reading_brain(context: dict[str, Any], *, clarify: bool = True) -> dict[str, Any]:
    """A model that books from the screen and what the agent understood of the user's words;
    ``clarify=False``: a lazy one that asks the same question again after an answer it cannot use."""
    stage, screen, understood = context["stage"], context["screen"], context["understood"]
    tools = {t["name"]: t for t in context["tools"]}
    said = [m["text"] for m in context["conversation"] if m["role"] == "agent"]

    def param(tool: str) -> str:
        return str(tools[tool]["params"]["required"][0])

    if understood["cancel"] and stage != "confirmation":
        if not any("nothing was booked" in s for s in said):
            return _say("info", "Understood, nothing was booked.", "the user called the booking off")
        return _answer({"type": "session.end", "reason": "the user called the booking off"})
    if stage == "browse":
        movie = next(m for m in screen["movies"] if m["title"].startswith("Dune"))
        return _call("select_movie", {param("select_movie"): movie["id"]}, "open Dune, the requested movie",
                     "showtimes")
    if stage == "showtimes":
        show = next(s for s in screen["showtimes"] if s["time"] >= "18:00")
        return _call("select_showtime", {param("select_showtime"): show["id"]}, "the first evening show", "seats")
    if stage == "seats":
        count = understood["seats"] or 1
        seats = choose_seats([Seat.model_validate(s) for s in screen["seats"]], count)
        return _call("select_seats", {param("select_seats"): seats}, f"{count} free seats side by side", "checkout")
    if stage == "checkout":
        name, email, shown = understood["name"], understood["email"], screen.get("contact") or {}
        if name and email and (shown.get("name"), shown.get("email")) != (name, email):
            return _call("enter_contact", {"name": name, "email": email}, f"the booking is for {name}", "checkout")
        if not (name and email):
            unhelpful = understood["unhelpfulAnswers"]
            if unhelpful and clarify:
                return _say("question", f'I could not use "{unhelpful[-1]}". Which name and e-mail address, '
                            f"for example Ada Lovelace, ada@example.com? (answer {len(unhelpful)})",
                            "the answer gave no contact details")
            if name or email:
                return _say("question", f"Thanks, I have {name or email}. What is the missing part?",
                            "one part of the contact is missing")
            return _say("question", CONTACT_QUESTION, "the contact details are missing")
        return _call("confirm_booking", {}, "everything is filled in: book it", "confirmation")
    if not any(s.startswith("Booked") for s in said):
        return _say("info", f"Booked {screen['bookingId']}.", "report the booking to the user")
    return _answer({"type": "session.end", "reason": "goal reached and reported"})


def _serve(fake: FakeGemini, brain: Brain) -> None:
    def handle(received: Received) -> Reply:
        return Reply([text(json.dumps(brain(_context_of(_first_user_texts(received)))))])

    fake.handler = handle


def _questions(session: Session) -> list[str]:
    return [e["payload"]["text"] for e in session.sent("agent.message") if e["payload"].get("kind") == "question"]


FREE_FORM = [c for c in CASES if c["id"] in ("c04", "c09", "c15", "c17", "s01", "s02", "r02")]


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize("case", FREE_FORM, ids=[c["id"] for c in FREE_FORM])
def test_the_llm_planner_books_from_free_form_answers(tmp_path: Path, host: str, case: dict[str, Any],
                                                      fake_gemini: FakeGemini, gemini: GeminiModel) -> None:
    _serve(fake_gemini, reading_brain)
    answers = list(case.get("earlier", []))
    faults = [f"goal_change:enter_contact:1:{case['message']}"] if case["category"] == "correction" else []
    if not faults:
        answers.append(case["message"])
    session = run(tmp_path, host=host, goal=GOAL, planner=build_llm_planner(gemini), fault_specs=faults,
                  host_kwargs={"user_answers": answers})
    assert session.result.outcome == "completed", session.result
    booked = session.booked
    assert (booked.name, booked.email) == (case["expected"]["name"], case["expected"]["email"])
    assert booked.reference is not None and booked.seats == 2
    # The model saw the user's own words and the agent's reading of them.
    last = _context_of(_first_user_texts(fake_gemini.requests[-1]))
    assert case["message"] in [m["text"] for m in last["conversation"] if m["role"] == "user"]
    assert last["understood"]["name"] == case["expected"]["name"]


CHANGES = {"i01": ("completed", 3), "i04": ("completed", 4), "i03": ("cancelled", None), "i09": ("cancelled", None)}


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize("case_id", CHANGES)
def test_the_llm_planner_follows_a_goal_change_mid_session(tmp_path: Path, host: str, case_id: str,
                                                          fake_gemini: FakeGemini, gemini: GeminiModel) -> None:
    _serve(fake_gemini, reading_brain)
    message = next(c["message"] for c in CASES if c["id"] == case_id)
    session = run(tmp_path, host=host, goal=GOAL, planner=build_llm_planner(gemini),
                  fault_specs=[f"goal_change:select_showtime:1:{message}"],
                  host_kwargs={"user_answers": ["Ada Lovelace <ada@example.com>"]})
    outcome, seats = CHANGES[case_id]
    assert session.result.outcome == outcome and session.result.exit_code == 0
    if seats is not None:
        assert session.booked.seats == seats and session.booked.name == "Ada Lovelace"
    else:
        assert session.booked.reference is None and "select_seats" not in [n for n, _ in session.calls()]


@pytest.mark.parametrize("host", HOSTS)
def test_with_the_llm_planner_three_unusable_answers_end_blocked(tmp_path: Path, host: str,
                                                               fake_gemini: FakeGemini, gemini: GeminiModel) -> None:
    _serve(fake_gemini, reading_brain)
    answers = ["why do you need that", "hmm let me check", "I'd rather not say"]
    session = run(tmp_path, host=host, goal=GOAL, planner=build_llm_planner(gemini),
                  host_kwargs={"user_answers": answers})
    assert session.result.outcome == "blocked" and session.booked.reference is None
    assert len(_questions(session)) == MAX_UNHELPFUL_ANSWERS
    (logged,) = session.logged("recovery", "unhelpful_answers")
    assert logged["data"]["answers"] == answers


@pytest.mark.parametrize("host", HOSTS)
def test_a_model_that_asks_the_same_question_again_is_refused(tmp_path: Path, host: str,
                                                             fake_gemini: FakeGemini, gemini: GeminiModel) -> None:
    # A lazy model repeats its question after an answer it cannot use: the safety policy refuses the
    # repeat (a failure on the stage), so the person never gets the same question twice in a row.
    _serve(fake_gemini, lambda context: reading_brain(context, clarify=False))
    session = run(tmp_path, host=host, goal=GOAL, planner=build_llm_planner(gemini),
                  host_kwargs={"user_answers": ["what?"]})
    asked = _questions(session)
    assert asked == [CONTACT_QUESTION]
    assert all(a != b for a, b in itertools.pairwise(asked))
    refused = [r for r in session.logged("recovery", "plan_rejected") if "same question" in r["reason"]]
    assert len(refused) == 3 and session.result.outcome == "blocked" and session.result.failures == {"checkout": 3}
