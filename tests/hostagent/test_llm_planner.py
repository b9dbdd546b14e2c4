"""The LLM planner: through the real google-genai SDK against the fake Gemini server (end to end
and repair), and with a scripted model for exact request checks."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from hostagent.llm_planner import OPERATION_TYPE, LlmPlanner, build_llm_planner, plan_schema
from hostagent.memory import AgentMemory, WorkingMemory
from hostagent.perception import PerceivedContext
from hostagent.protocol import ToolSpec
from hostagent.reference_host.catalog import STAGE_TOOLS, tool_schema
from shared.models.base import ModelRequest, ModelResponse, Part, Turn
from shared.models.gemini import GeminiModel
from shared.models.scripted import ScriptedModel, text_turn
from tests.fakes.fake_gemini import FakeGemini, Received, Reply, text
from tests.hostagent.support import run

GOAL = "Book 2 seats for Inside Out 2, name Ada Lovelace, email ada@example.com"


def _context_of(texts: list[str]) -> dict[str, Any]:
    """The context JSON the planner put in its first user turn."""
    prompt = texts[0]
    assert prompt.startswith("Context (JSON):\n")
    data: dict[str, Any] = json.loads(prompt.split("\n", 1)[1])
    return data


def _tool(name: str, params: dict[str, Any], reason: str, expected: str | None) -> dict[str, Any]:
    return {"currentStage": "", "remainingSteps": [], "confidence": 0.8, "expectedStage": expected,
            "nextAction": {"type": "tool.call", "tool": name, "params": params, "reason": reason}}


def booking_brain(context: dict[str, Any]) -> dict[str, Any]:
    """What a competent model answers for the booking flow, from the normalised screen it is shown
    (the same on every host, whatever its uiSpec dialect)."""
    stage, screen = context["stage"], context["screen"]
    tools = {t["name"]: t for t in context["tools"]}

    def param(tool: str) -> str:
        return str(tools[tool]["params"]["required"][0])

    if stage == "browse":
        movie = next(m for m in screen["movies"] if m["title"] == "Inside Out 2")
        return _tool("select_movie", {param("select_movie"): movie["id"]}, "open Inside Out 2, the requested movie",
                     "showtimes")
    if stage == "showtimes":
        return _tool("select_showtime", {param("select_showtime"): screen["showtimes"][0]["id"]},
                     "the first showtime fits", "seats")
    if stage == "seats":
        free = [s["id"] for s in screen["seats"] if s["available"]][:2]
        return _tool("select_seats", {param("select_seats"): free}, "two free seats for the two tickets", "checkout")
    if stage == "checkout":
        if not screen.get("contact"):
            return _tool("enter_contact", {"name": "Ada Lovelace", "email": "ada@example.com"},
                         "the booking is for Ada Lovelace", "checkout")
        return _tool("confirm_booking", {}, "everything is filled in: book it", "confirmation")
    said = [m for m in context["conversation"] if m["role"] == "agent"]
    if not said:
        return {"currentStage": stage, "remainingSteps": [], "confidence": 1.0, "expectedStage": None,
                "nextAction": {"type": "agent.message", "kind": "info", "text": f"Booked {screen['bookingId']}.",
                               "reason": "report the booking to the user"}}
    return {"currentStage": stage, "remainingSteps": [], "confidence": 1.0, "expectedStage": None,
            "nextAction": {"type": "session.end", "reason": "goal reached and reported"}}


def _first_user_texts(received: Received) -> list[str]:
    contents = received.body["contents"]
    return [p["text"] for p in contents[0]["parts"] if "text" in p]


def test_end_to_end_booking_with_the_llm_planner(tmp_path: Path, fake_gemini: FakeGemini,
                                                 gemini: GeminiModel) -> None:
    fake_gemini.handler = lambda r: Reply([text(json.dumps(booking_brain(_context_of(_first_user_texts(r)))))])
    planner = build_llm_planner(gemini)
    session = run(tmp_path, goal=GOAL, planner=planner)
    assert session.result.outcome == "completed" and session.result.exit_code == 0
    assert [c[0] for c in session.calls()] == ["select_movie", "select_showtime", "select_seats", "enter_contact",
                                               "confirm_booking"]
    assert session.booking.movie_id == "m2" and session.booking.booking_id is not None
    fake_gemini.assert_complete()
    # Structured output: JSON answers constrained by a schema naming exactly the stage's tools.
    assert len(fake_gemini.requests) == planner.calls == 7
    for received in fake_gemini.requests:
        config = received.body["generationConfig"]
        assert config["responseMimeType"] == "application/json"
        schema = config["responseJsonSchema"]
        stage = _context_of(_first_user_texts(received))["stage"]
        offered = [v["properties"]["tool"]["enum"][0] for v in schema["properties"]["nextAction"]["anyOf"]
                   if "tool" in v["properties"]]
        assert offered == list(STAGE_TOOLS[stage])
    # Usage is accounted and every plan line names the operation type (for the usage ledger).
    assert planner.usage.requests == 7 and planner.usage.total_tokens > 0
    plans = session.logged("plan")
    assert plans and all(p["data"]["operationType"] == OPERATION_TYPE == "host_planner" for p in plans)
    assert plans[-1]["data"]["usage"]["requests"] == 7


def test_an_answer_outside_the_tool_schema_gets_one_repair(tmp_path: Path, fake_gemini: FakeGemini,
                                                          gemini: GeminiModel) -> None:
    # The first answer calls a tool the browse stage does not offer; the repair request shows the
    # model its answer and the problems; the second answer is used.
    bad = _tool("confirm_booking", {}, "book straight away, skipping the steps", "confirmation")
    fake_gemini.push(Reply([text(json.dumps(bad))]))
    fake_gemini.handler = lambda r: Reply([text(json.dumps(booking_brain(_context_of(_first_user_texts(r)))))])
    session = run(tmp_path, goal=GOAL, planner=build_llm_planner(gemini))
    assert session.result.outcome == "completed"
    assert "confirm_booking" not in [c[0] for c in session.calls()[:1]]
    repair = fake_gemini.requests[1].body["contents"]
    assert [c["role"] for c in repair] == ["user", "model", "user"]
    assert json.loads(repair[1]["parts"][0]["text"]) == bad
    assert repair[2]["parts"][0]["text"].startswith("Your answer was not valid:")
    assert "'confirm_booking' is not one of ['search_movies']" in repair[2]["parts"][0]["text"]
    fake_gemini.assert_complete()


def test_a_plan_that_stays_invalid_counts_as_a_failure_and_blocks(tmp_path: Path) -> None:
    model = ScriptedModel([text_turn("I think you should pick a movie.")] * 6)
    session = run(tmp_path, goal=GOAL, planner=build_llm_planner(model))
    assert session.result.outcome == "blocked" and session.result.exit_code == 0
    assert session.calls() == []  # nothing reached the host
    errors = [r for r in session.records if r["kind"] == "error" and r["type"] == "plan"]
    assert [e["code"] for e in errors] == ["PLANNER_FAILED"] * 3  # each after its repair attempt
    assert "not JSON" in errors[0]["reason"]
    assert session.result.failures == {"browse": 3}
    assert "planning failed" in session.sent("agent.message")[-1]["payload"]["text"]
    model.assert_complete()


def _context(stage: str) -> PerceivedContext:
    return PerceivedContext(sessionId="s", stage=stage, uiSpec={}, toolSchema=[ToolSpec.model_validate(t) for t in
                                                                                tool_schema(stage)],
                            lastUserMessage=None, messageHistoryTail=[], goal="g")


def test_the_request_is_strict_structured_output_for_the_current_tools() -> None:
    answer = _tool("go_back", {}, "the user wants another movie", "browse")
    model = ScriptedModel([ModelResponse(turn=Turn(role="model", parts=[Part(text=json.dumps(answer))]))])
    planner = build_llm_planner(model, timeout_s=12.0)
    assert isinstance(planner, LlmPlanner) and planner.operation_type == "host_planner"
    plan = asyncio.run(planner.plan(_context("seats"), AgentMemory(working=WorkingMemory(goal="g"))))
    (request,) = model.requests
    assert isinstance(request, ModelRequest)
    assert request.response_schema == plan_schema(_context("seats"))
    assert request.timeout_s == 12.0 and request.temperature == 0.0 and request.tools == []
    assert plan.nextAction.tool == "go_back" and plan.nextAction.expectedStage == "browse"
    assert plan.planner == "llm" and plan.confidence == 0.8
    variants = request.response_schema["properties"]["nextAction"]["anyOf"]
    select_seats = next(v for v in variants if v["properties"].get("tool", {}).get("enum") == ["select_seats"])
    assert select_seats["properties"]["params"] == tool_schema("seats")[0]["params"]  # the host's own schema
