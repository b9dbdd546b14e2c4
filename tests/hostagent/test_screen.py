"""Perception normalises any uiSpec (``hostagent.screen``): the same view from different dialects,
"nothing recognised" (never an exception) for shapes it does not know."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from hostagent.llm_planner import LlmPlanner
from hostagent.memory import AgentMemory, WorkingMemory
from hostagent.perception import PerceivedContext
from hostagent.screen import Seat, read_screen
from shared.models.scripted import ScriptedModel, text_turn

MOVIES = [("m1", "Dune: Part Two"), ("m2", "Inside Out 2")]


@pytest.mark.parametrize("ui", [
    {"movies": [{"id": i, "title": t} for i, t in MOVIES]},
    {"components": [{"type": "section", "children": [{"type": "card", "id": i, "name": t} for i, t in MOVIES]}]},
    {"sections": [{"title": "Now", "content": {"items": [{"filmId": i, "label": t, "year": 2024}
                                                         for i, t in MOVIES]}}]},
    [{"id": i, "displayName": t} for i, t in MOVIES],
], ids=["top-level", "components-children", "sections-items", "bare-list"])
def test_movies_are_found_wherever_they_sit(ui: Any) -> None:
    view = read_screen(ui)
    assert [(m.id, m.title) for m in view.movies] == MOVIES
    assert view.recognised and not view.seats and not view.showtimes


@pytest.mark.parametrize("ui", [
    {"showtimes": [{"id": "s1", "date": "2026-07-01", "time": "20:30"}]},
    {"children": [{"type": "slot", "id": "s1", "label": "Wed 1 Jul", "startsAt": "2026-07-01T20:30:00Z"}]},
    {"screenings": [{"key": "s1", "label": "2026-07-01 at 20:30"}]},
], ids=["date-time", "iso-start", "label-under-screenings"])
def test_showtimes_get_a_date_and_a_time(ui: Any) -> None:
    (show,) = read_screen(ui).showtimes
    assert (show.id, show.date, show.time) == ("s1", "2026-07-01", "20:30")


@pytest.mark.parametrize("ui", [
    {"seats": [{"id": "A1", "available": True}, {"id": "A2", "available": False}, {"id": "B1", "taken": False}]},
    {"map": [{"seatId": "A1", "status": "free"}, {"seatId": "A2", "status": "SOLD"},
             {"seatId": "B1", "state": "open"}]},
    {"rows": [{"row": "A", "seats": [{"number": 1, "status": "available"}, {"number": 2, "status": "occupied"}]},
              {"row": "B", "seats": [True]}]},
    {"type": "seatmap", "rowLabels": ["A", "B"], "grid": [["free", "sold"], ["free"]]},
    {"grid": [[{"status": "free"}, {"status": "reserved"}], [{"available": True}]]},
], ids=["list-booleans", "list-status-words", "rows", "grid-with-labels", "grid-of-cells"])
def test_seat_maps_as_lists_rows_or_grids(ui: Any) -> None:
    assert read_screen(ui).seats == [Seat(id="A1", available=True), Seat(id="A2", available=False),
                                     Seat(id="B1", available=True)]


def test_the_order_the_form_and_the_booking() -> None:
    ui = {"view": "basket", "sections": [
        {"type": "summary", "film": {"id": "f1", "name": "Oppenheimer"},
         "screening": {"id": "s9", "label": "Thu 2 Jul, 21:00", "startsAt": "2026-07-02T21:00"},
         "places": ["C4", "C5"], "promo": "SAVE10", "amountDue": "£20.70"},
        {"type": "form", "fields": [{"name": "name", "label": "Full name", "value": "Ada Lovelace"},
                                    {"name": "email", "label": "E-mail", "value": "ada@example.com"}]}],
        "confirmation": {"reference": "LUM-1"}}
    view = read_screen(ui)
    assert view.movie is not None and view.movie.title == "Oppenheimer"
    assert view.showtime is not None and (view.showtime.date, view.showtime.time) == ("2026-07-02", "21:00")
    assert view.heldSeats == ["C4", "C5"] and view.coupon == "SAVE10" and view.total == "£20.70"
    assert view.contact is not None and (view.contact.name, view.contact.email) == ("Ada Lovelace", "ada@example.com")
    assert [f.name for f in view.fields] == ["name", "email"] and view.bookingId == "LUM-1"
    assert not view.movies  # the selected film is not a listing


@pytest.mark.parametrize("ui", [
    None, 0, "browse", [], {}, [[1, [2, [3]]]], {"a": {"b": [{"c": None}]}}, {"title": "Welcome", "text": "hi"},
    {"x": {"x": {"x": {"x": {"x": {"x": {"x": {"x": {"x": {"x": {"x": {"x": {"x": {"x": [1]}}}}}}}}}}}}}},
    {"grid": [[None, 3.5, {"odd": []}]]}, {"seats": [{"id": "not a seat", "available": "maybe"}]},
    {"components": [{"type": "button", "id": "back", "label": "Back"}]},
], ids=lambda v: json.dumps(v)[:30])
def test_unknown_shapes_are_nothing_recognised_never_an_error(ui: Any) -> None:
    view = read_screen(ui)
    assert not view.recognised
    assert set(view.summary()) <= {"notices"}


def test_the_llm_planner_gets_the_raw_ui_spec_only_when_nothing_was_recognised() -> None:
    answer = {"currentStage": "x", "remainingSteps": [], "confidence": 0.5, "expectedStage": None,
              "nextAction": {"type": "agent.message", "kind": "question", "text": "What now?",
                             "reason": "the screen is unknown to me"}}
    model = ScriptedModel([text_turn(json.dumps(answer))] * 2)
    planner = LlmPlanner(model)
    memory = AgentMemory(working=WorkingMemory(goal="g"))
    prompts = []
    for ui in ({"widgets": [{"kind": "mystery", "payload": 42}]}, {"movies": [{"id": "m1", "title": "Dune"}]}):
        context = PerceivedContext(sessionId="s", stage="x", screen=read_screen(ui), uiSpec=ui, toolSchema=[],
                                   lastUserMessage=None, messageHistoryTail=[], goal="g")
        asyncio.run(planner.plan(context, memory))
        prompts.append(json.loads(model.requests[-1].turns[0].parts[0].text.split("\n", 1)[1]))
    assert prompts[0]["screenNotRecognised"] is True and prompts[0]["uiSpec"] == {"widgets": [{"kind": "mystery",
                                                                                               "payload": 42}]}
    assert "uiSpec" not in prompts[1] and prompts[1]["screen"] == {"movies": [{"id": "m1", "title": "Dune"}]}
