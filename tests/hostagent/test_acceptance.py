"""Seed 002 §10 / issue 12 / issue 19 acceptance, each against both hosts (the reference host and
the independent alternative host, with its own uiSpec dialect) over real WebSockets.

Every session run here also passes ``check_session`` (support.py): a complete log that validates
against its schema and matches the wire, valid frames only, every tool.call offered by the current
toolSchema and with a reason, never two calls in flight.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hostagent.alt_host.cinema import TOOLS_BY_STAGE
from hostagent.reference_host.catalog import STAGE_TOOLS
from tests.hostagent.support import HOSTS, UPDATE_TIMEOUT_S, assert_clean, run

pytestmark = pytest.mark.parametrize("host", HOSTS)
STAGES = {"reference": STAGE_TOOLS, "alt": TOOLS_BY_STAGE}

FLOW = ["search_movies", "select_movie", "select_showtime", "select_seats", "enter_contact", "apply_coupon",
        "confirm_booking"]


def test_end_to_end_booking_with_the_rules_planner(tmp_path: Path, host: str) -> None:
    session = run(tmp_path, host=host)
    assert session.result.outcome == "completed" and session.result.exit_code == 0
    assert_clean(session)  # and check_session (in run): valid frames, offered tools, reasons, single flight
    assert [name for name, _ in session.calls()] == FLOW
    booked = session.booked
    assert booked.stage == "confirmation" and booked.reference is not None
    assert booked.movie == "Dune: Part Two" and booked.name == "Grace Hopper" and booked.coupon == "SAVE10"
    assert booked.seats == 2
    # The host's state.updated always carried exactly the stage's tools.
    for update in session.received("state.updated"):
        payload = update["payload"]
        assert [t["name"] for t in payload["toolSchema"]] == list(STAGES[host][payload["stage"]])
    # The user was told, and the session was ended with the host.
    messages = [e["payload"] for e in session.sent("agent.message")]
    assert messages[-1]["text"].startswith(f"Booked {booked.reference}: Dune: Part Two")
    assert re.search(r", total £?\d+\.\d\d\.$", messages[-1]["text"]), messages[-1]["text"]  # money: 2 decimals
    assert session.sent()[-1]["type"] == "session.end"
    assert session.received()[-1]["type"] == "session.ended"
    assert session.result.summary is not None and booked.reference in session.result.summary


def test_every_call_is_offered_has_a_reason_and_none_overlap(tmp_path: Path, host: str) -> None:
    # A session with a goal change and a schema race exercises replanning, go_back and resync.
    session = run(tmp_path, host=host, fault_specs=["unknown_tool_after_schema_change", "goal_change:select_seats:1:"
                                         "Sorry, make it Oppenheimer"],
                  goal="Book 2 seats for Dune on 2026-07-01, name Grace Hopper, email grace@example.com")
    calls = session.sent("tool.call")
    assert len(calls) >= 5
    assert all(c["payload"]["reason"].strip() for c in calls)
    # check_session (inside run) walked the log: each call's tool was in the toolSchema the agent had
    # last accepted and no call was sent while another waited for its reply. Spot-check the host side:
    offered_at_call = []
    tools: list[str] = []
    for frame in session.frames:
        data = frame.json() or {}
        if frame.direction == "out" and data.get("type") in ("snapshot.state", "state.updated"):
            tools = [t["name"] for t in data["payload"]["toolSchema"]]
        if frame.direction == "in" and data.get("type") == "tool.call":
            offered_at_call.append(data["payload"]["name"] in tools)
    assert all(offered_at_call)


def test_recovers_from_a_dropped_state_update_through_snapshot(tmp_path: Path, host: str) -> None:
    session = run(tmp_path, host=host, fault_specs=["drop_state_update:select_movie"],
                  update_timeout_s=UPDATE_TIMEOUT_S)
    assert session.result.outcome == "completed"
    sent = [e["type"] for e in session.sent()]
    select = next(i for i, e in enumerate(session.sent()) if e["type"] == "tool.call"
                  and e["payload"]["name"] == "select_movie")
    assert sent[select + 1] == "snapshot.get"  # the resync, right after the call whose update never came
    assert [r["code"] for r in session.logged("recovery")] == ["TIMEOUT_STATE_UPDATE"]
    verification = [r for r in session.logged("verification") if r["type"] == "tool.call"]
    assert all(r["outcome"] == "ok" for r in verification)
    assert any(r["data"]["timedOut"] and r["data"]["observedStage"] == "showtimes" for r in verification)
    assert session.result.failures == {}  # a late update is not a failure


def test_recovers_from_a_state_update_delayed_past_the_timeout(tmp_path: Path, host: str) -> None:
    session = run(tmp_path, host=host, fault_specs=["delay_state_update:select_showtime"],
                  update_timeout_s=UPDATE_TIMEOUT_S)
    assert session.result.outcome == "completed"
    assert [r["code"] for r in session.logged("recovery")] == ["TIMEOUT_STATE_UPDATE"]
    call = next(e for e in session.sent("tool.call") if e["payload"]["name"] == "select_showtime")
    late = [e for e in session.received("state.updated") if e["payload"].get("cause") == call["id"]]
    assert len(late) == 1, "the delayed update did arrive, after the resync"
    stale = [r for r in session.logged("verification") if r["outcome"] == "stale"]
    assert [r["id"] for r in stale] == [late[0]["id"]]
    assert session.booked.reference is not None


def test_recovers_from_unknown_tool_after_a_schema_change(tmp_path: Path, host: str) -> None:
    session = run(tmp_path, host=host, fault_specs=["unknown_tool_after_schema_change"])
    assert session.result.outcome == "completed"
    errors = session.received("error")
    assert [e["payload"]["code"] for e in errors] == ["UNKNOWN_TOOL"]
    sent = session.sent()
    failed = next(i for i, e in enumerate(sent) if e["id"] == errors[0]["replyTo"])
    assert sent[failed + 1]["type"] == "snapshot.get"  # resync, then the replanned call
    assert sent[failed + 2]["type"] == "tool.call"
    assert [(r["type"], r["code"]) for r in session.logged("recovery")] == [("resync_replan", "UNKNOWN_TOOL")]
    assert session.result.failures == {"showtimes": 1}


def test_invalid_params_on_a_first_attempt_are_adjusted_and_retried_once(tmp_path: Path, host: str) -> None:
    session = run(tmp_path, host=host, fault_specs=["invalid_params_first:enter_contact"])
    assert session.result.outcome == "completed"
    contact_calls = [e for e in session.sent("tool.call") if e["payload"]["name"] == "enter_contact"]
    assert len(contact_calls) == 2
    retry = next(r for r in session.logged("action", "tool.call") if r["id"] == contact_calls[1]["id"])
    assert retry["data"]["retryOf"] == contact_calls[0]["id"]
    assert retry["data"]["planId"] == next(r for r in session.logged("action", "tool.call")
                                           if r["id"] == contact_calls[0]["id"])["data"]["planId"]
    assert [r["type"] for r in session.logged("recovery")] == ["adjust_retry"]


def test_invalid_params_twice_replans_instead_of_retrying_again(tmp_path: Path, host: str) -> None:
    # An unknown coupon is rejected on the attempt and on the adjusted retry: the agent replans,
    # books without it and says so.
    session = run(tmp_path, host=host, goal="Book 1 seat for Oppenheimer on 2026-07-02, name Ada Lovelace, "
                  "email ada@example.com, coupon BOGUS1")
    assert session.result.outcome == "completed"
    coupon_calls = [c for c in session.calls() if c[0] == "apply_coupon"]
    assert coupon_calls == [("apply_coupon", {"code": "BOGUS1"})] * 2
    assert [r["type"] for r in session.logged("recovery")] == ["adjust_retry", "replan"]
    assert session.booked.coupon is None and session.booked.reference is not None
    assert "coupon BOGUS1 was not accepted" in session.sent("agent.message")[-1]["payload"]["text"]


def test_recovers_from_tool_execution_failed_twice(tmp_path: Path, host: str) -> None:
    session = run(tmp_path, host=host, fault_specs=["tool_execution_failed:confirm_booking:2"])
    assert session.result.outcome == "completed"
    assert [c[0] for c in session.calls()].count("confirm_booking") == 3
    assert session.result.failures == {"checkout": 2}
    assert session.booked.reference is not None


def test_follows_a_goal_change_mid_flow(tmp_path: Path, host: str) -> None:
    session = run(tmp_path, host=host,
                  fault_specs=["goal_change:select_showtime:1:Actually, make it Oppenheimer instead"])
    assert session.result.outcome == "completed"
    names = [c[0] for c in session.calls()]
    assert names[names.index("select_showtime") + 1:][:2] == ["go_back", "go_back"]
    assert session.booked.movie == "Oppenheimer"  #, not the Dune of the original goal
    said = [e["payload"]["text"] for e in session.sent("agent.message")]
    assert any(t.startswith("Understood, changing the plan") and "Oppenheimer" in t for t in said)


def test_three_failures_on_a_stage_block_and_stop_acting(tmp_path: Path, host: str) -> None:
    session = run(tmp_path, host=host, fault_specs=["tool_execution_failed:confirm_booking:3"])
    assert session.result.outcome == "blocked" and session.result.exit_code == 0
    sent = session.sent()
    blocked = [i for i, e in enumerate(sent) if e["type"] == "agent.message" and e["payload"].get("kind") == "blocked"]
    assert len(blocked) == 1
    assert "3 attempts failed on the checkout screen" in sent[blocked[0]]["payload"]["text"]
    assert "TOOL_EXECUTION_FAILED" in sent[blocked[0]]["payload"]["text"]
    assert [e["type"] for e in sent[blocked[0] + 1:]] == ["session.end"]  # no call after it
    assert session.booked.reference is None
    assert session.result.failures == {"checkout": 3}


def test_the_log_of_a_faulty_session_is_complete(tmp_path: Path, host: str) -> None:
    session = run(tmp_path, host=host, update_timeout_s=UPDATE_TIMEOUT_S, fault_specs=[
        "drop_state_update:search_movies", "invalid_params_first:select_seats",
        "tool_execution_failed:enter_contact:1"])
    records = session.records
    kinds = {r["kind"] for r in records}
    assert {"session", "envelope", "plan", "action", "outcome", "verification", "recovery"} <= kinds
    # Plan lineage: every action names the plan that produced it, and that plan was logged first.
    plans = {r["id"] for r in records if r["kind"] == "plan"}
    actions = [r for r in records if r["kind"] == "action" and r["type"] in ("tool.call", "agent.message")]
    assert actions and all(r["data"]["planId"] in plans or r["data"]["planId"].startswith("plan") for r in actions)
    outcomes = {r["id"]: r for r in records if r["kind"] == "outcome"}
    for call in session.sent("tool.call"):
        assert call["id"] in outcomes
        assert outcomes[call["id"]]["outcome"] in ("success", "failed", "replan-required")
    codes = [r["code"] for r in outcomes.values() if r["code"]]
    assert sorted(codes) == ["INVALID_PARAMS", "TOOL_EXECUTION_FAILED"]
    for r in records:
        assert set(r) >= {"ts", "sessionId", "direction", "type", "id", "replyTo", "stage", "reason", "outcome",
                          "code"}
    assert all(r["sessionId"] == session.result.sessionId for r in records[4:])


def test_an_unanswered_question_ends_blocked_within_the_bound(tmp_path: Path, host: str) -> None:
    # No contact details in the goal and nobody answering: the agent asks, waits (bounded), gives up,
    # says so (kind blocked), ends the session, and exits 6 (no_answer) with a complete log.
    session = run(tmp_path, host=host, goal="Book 1 seat for Dune", host_kwargs={"user_profile": None},
                  question_timeout_s=1.0)
    assert session.result.outcome == "no_answer" and session.result.exit_code == 6
    assert session.records[-1]["outcome"] == "no_answer"  # check_session: the log is complete
    assert session.sent()[-1]["type"] == "session.end" and session.received()[-1]["type"] == "session.ended"
    kinds = [e["payload"].get("kind") for e in session.sent("agent.message")]
    assert kinds == ["info", "question", "blocked"]
    # The question's own bound (1 s) is what ran out, well inside the session's (60 s).
    assert session.sent("agent.message")[-1]["payload"]["text"].endswith("no answer to my question within 1s")
    assert session.calls()[-1][0] == "select_seats"  # it reached checkout, then stopped without booking
    assert session.booked.reference is None


QUESTION_S = 30.0
SESSION_S = 5.0


def test_a_question_never_waits_past_the_session_bound(tmp_path: Path, host: str) -> None:
    # The question's own bound (30 s) is longer than the whole session (5 s, ample to reach the
    # question on a loaded machine): the session's hard bound cuts the wait, and the agent still says
    # why, ends the session and completes its log.
    session = run(tmp_path, host=host, goal="Book 1 seat for Dune", host_kwargs={"user_profile": None},
                  question_timeout_s=QUESTION_S, session_timeout_s=SESSION_S)
    assert session.result.outcome == "no_answer" and session.result.exit_code == 6, session.result
    blocked = session.sent("agent.message")[-1]["payload"]
    assert blocked["kind"] == "blocked"
    waited = re.fullmatch(r"I am stopping without finishing: no answer to my question within ([0-9.]+)s",
                          blocked["text"])
    assert waited is not None, blocked["text"]
    # What the question waited was the rest of the session (less the closing reserve), not its own bound.
    assert 0 < float(waited.group(1)) < SESSION_S < QUESTION_S
    assert session.sent()[-1]["type"] == "session.end" and session.received()[-1]["type"] == "session.ended"
    assert session.records[-1]["outcome"] == "no_answer"
