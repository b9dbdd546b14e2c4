"""Safety and retry policies, and the planner's perception of the user's words."""

from __future__ import annotations

from pathlib import Path

import pytest

from hostagent.memory import AgentMemory
from hostagent.perception import PerceivedContext, signals
from hostagent.plans import NavigationPlan, PlannedAction
from hostagent.policies.retry import Recovery, RetryPolicy, adjust_params
from hostagent.protocol import ToolSpec, new_id
from hostagent.reference_host.catalog import TOOLS
from hostagent.rules_planner import choose_seats
from hostagent.screen import Seat
from tests.hostagent.support import run


class FixedPlanner:
    """Proposes the same action every time (a misbehaving planner)."""

    name = "fixed"

    def __init__(self, action: PlannedAction) -> None:
        self.action = action
        self.plans = 0

    async def plan(self, context: PerceivedContext, memory: AgentMemory) -> NavigationPlan:
        self.plans += 1
        return NavigationPlan(planId=new_id("plan"), planner=self.name, goal=context.goal,
                              currentStage=context.stage, remainingSteps=[], nextAction=self.action, confidence=0.5)


@pytest.mark.parametrize(("action", "problem"), [
    (PlannedAction(type="tool.call", reason="book the seats right now", payload={"name": "confirm_booking",
                                                                                "params": {}}),
     "tool 'confirm_booking' is not in the current toolSchema (stage browse: search_movies, select_movie)"),
    (PlannedAction(type="tool.call", reason="  ", payload={"name": "select_movie", "params": {"movieId": "m1"}}),
     "tool.call needs a concrete reason"),
    (PlannedAction(type="tool.call", reason="next step", payload={"name": "select_movie", "params": {"movieId": "m1"}}),
     "tool.call needs a concrete reason, got 'next step'"),
    (PlannedAction(type="tool.call", reason="open the movie the user wants", payload={"name": "select_movie",
                                                                                     "params": {"id": "m1"}}),
     "params (root): 'movieId' is a required property"),
], ids=["tool-not-offered", "empty-reason", "vacuous-reason", "params-off-schema"])
def test_an_unsafe_action_is_never_sent(tmp_path: Path, action: PlannedAction, problem: str) -> None:
    planner = FixedPlanner(action)
    session = run(tmp_path, planner=planner)
    assert session.calls() == []  # nothing reached the host
    rejected = [r for r in session.records if r["kind"] == "recovery" and r["type"] == "plan_rejected"]
    assert len(rejected) == 3 and all(r["code"] == "SAFETY_REJECTED" for r in rejected)
    assert problem in rejected[0]["reason"]
    assert session.result.outcome == "blocked" and planner.plans == 3
    assert session.sent("agent.message")[-1]["payload"]["kind"] == "blocked"


def test_a_call_that_keeps_succeeding_in_a_loop_is_stopped(tmp_path: Path) -> None:
    search = PlannedAction(type="tool.call", reason="search for Dune again and again",
                           payload={"name": "search_movies", "params": {"query": "Dune"}})
    session = run(tmp_path, planner=FixedPlanner(search))
    assert [c[0] for c in session.calls()] == ["search_movies", "search_movies"]
    assert session.result.outcome == "blocked"
    assert "repeating it is a loop" in session.logged("recovery", "plan_rejected")[0]["reason"]


def test_recovery_follows_the_seed() -> None:
    policy = RetryPolicy()
    assert policy.decide("UNKNOWN_TOOL") is Recovery.RESYNC_REPLAN
    assert policy.decide("INVALID_PARAMS") is Recovery.ADJUST_RETRY
    assert policy.decide("INVALID_PARAMS", is_retry=True) is Recovery.REPLAN
    assert policy.decide("TIMEOUT_STATE_UPDATE") is Recovery.SNAPSHOT_CONTINUE
    assert policy.decide("TIMEOUT_RESULT") is Recovery.RESYNC_REPLAN
    assert policy.decide("TOOL_EXECUTION_FAILED") is Recovery.REPLAN
    assert policy.decide("SESSION_NOT_ACTIVE") is Recovery.ABORT
    assert policy.decide("INVALID_MESSAGE") is Recovery.ABORT
    assert not policy.counts_as_failure("TIMEOUT_STATE_UPDATE") and policy.counts_as_failure("UNKNOWN_TOOL")
    assert [policy.blocked(n) for n in (1, 2, 3, 4)] == [False, False, True, True]


def test_adjusting_params_fits_them_to_the_schema() -> None:
    contact = ToolSpec(name="enter_contact", params=TOOLS["enter_contact"]["params"])
    assert adjust_params(contact, {"name": " Ada ", "email": " ada@example.com ", "phone": "1"}) == {
        "name": " Ada ", "email": "ada@example.com"}  # name already fits; unknown key dropped
    coupon = ToolSpec(name="apply_coupon", params=TOOLS["apply_coupon"]["params"])
    assert adjust_params(coupon, {"code": " save10"}) == {"code": "SAVE10"}
    seats = ToolSpec(name="select_seats", params=TOOLS["select_seats"]["params"])
    assert adjust_params(seats, {"seatIds": ["c5", "C5", "c6"]}) == {"seatIds": ["C5", "C6"]}
    typed = ToolSpec(name="t", params={"type": "object", "properties": {"n": {"type": "integer"},
                                                                        "ok": {"type": "boolean"}}})
    assert adjust_params(typed, {"n": "3", "ok": "true"}) == {"n": 3, "ok": True}
    assert adjust_params(coupon, {"code": "no such"}) == {"code": "no such"}  # nothing fits: unchanged


def test_signals_from_the_users_words_later_ones_win() -> None:
    got = signals(["Book two tickets for Dune on 2026-07-01 at 17:30, coupon save10",
                   "My name is Ada Lovelace and my email is ada@example.com.", "Make it 3 seats in the evening"])
    # "in the evening" after "at 17:30": the later part of the day replaces the earlier time.
    assert got.model_dump(exclude_defaults=True, exclude={"last"}) == {
        "date": "2026-07-01", "day_part": "evening", "count": 3, "name": "Ada Lovelace", "email": "ada@example.com",
        "coupon": "save10"}
    assert signals(["Book tickets for Dune at 17:30", "two seats"]).time == "17:30"  # unrelated: kept
    assert signals(["Book tickets for Dune"]).model_dump(exclude_defaults=True) == {}


def test_seats_are_adjacent_and_central_first() -> None:
    seat_map = [Seat(id=f"{r}{n}", available=(r, n) not in {("C", 4), ("C", 5)}) for r in "ABCDE"
                for n in range(1, 9)]
    assert choose_seats(seat_map, 2) in (["C2", "C3"], ["C6", "C7"])
    assert choose_seats(seat_map, 4) == ["D3", "D4", "D5", "D6"]
    assert choose_seats([Seat(id="A1", available=True)], 2) == []
