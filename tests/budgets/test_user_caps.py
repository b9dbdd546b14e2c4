"""A user's own money caps (issue 30, docs/budgets.md "Setting them"), on both stores: the admin API
sets and reads a user's daily and monthly caps (``PATCH/GET /api/admin/users/{uid}``, limits
``dailyBudgetUsd`` / ``monthlyBudgetUsd``; anyone else 403, bad values 400 with nothing written);
the monthly cap is checked before each model call across all the user's runs: reached, the run
pauses with a ``user_month`` budget approval; approving raises that month's cap only; the next UTC
month starts from nothing (the budgets' clock, ``Services.clock``, is moved)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from flask.testing import FlaskClient

from devserver import create_app
from shared.runtime import Runtime, set_runtime
from shared.state.docstore import DocStore
from shared.state.records import UsageEntry
from tests.budgets.test_budgets import ALICE, decide, runtime
from tests.plans.test_sessions_http import deliver

ADMIN = {"Authorization": "Bearer dev-admin:ops"}
BOB = {"Authorization": "Bearer dev:bob"}
JANUARY = datetime(2031, 1, 31, 23, 0, tzinfo=UTC).timestamp()
FEBRUARY = datetime(2031, 2, 1, 0, 30, tzinfo=UTC).timestamp()
EARLIER_IN_JANUARY = datetime(2031, 1, 10, 9, 0, tzinfo=UTC).timestamp()


def spend(rt: Runtime, uid: str, usd: float, at: float) -> None:
    """A model call of an earlier run, in the ledger (its day and month counters move with it)."""
    rt.usage.record(UsageEntry(entry_id=f"run_earlier-{at:.0f}-{usd}", uid=uid, unit_kind="run", unit_id="run_earlier",
                               component="loop", operation_type="chat", model="gemini-3-flash", cost_usd=usd, at=at,
                               day=datetime.fromtimestamp(at, UTC).date().isoformat()))


def limits(client: FlaskClient, uid: str) -> dict[str, Any]:
    got = client.get(f"/api/admin/users/{uid}", headers=ADMIN)
    assert got.status_code == 200, got.get_json()
    return got.get_json()["limits"]  # type: ignore[no-any-return]


@pytest.fixture
def client_of(docstore: DocStore) -> Any:
    made: list[Runtime] = []

    def make(**settings: Any) -> tuple[Runtime, FlaskClient]:
        rt, _ = runtime(docstore, **settings)
        made.append(rt)
        set_runtime(rt)
        return rt, create_app().test_client()

    yield make
    set_runtime(None)


@pytest.mark.parametrize("bad", [{"monthlyBudgetUsd": -1}, {"monthlyBudgetUsd": "5"}, {"monthlyBudgetUsd": True},
                                 {"dailyBudgetUsd": 2_000_000}, {"monthlyBudgetUsd": [1]},
                                 {"monthlyBudgetUsd": 1, "yearlyBudgetUsd": 3}])
def test_bad_money_caps_are_refused_with_nothing_written(client_of: Any, docstore: DocStore,
                                                         bad: dict[str, Any]) -> None:
    _, client = client_of(budget_user_daily_usd=1.0, budget_user_monthly_usd=5.0)
    answer = client.patch("/api/admin/users/alice", json={"limits": bad}, headers=ADMIN)
    assert answer.status_code == 400, answer.get_json()
    assert "limits" in str(answer.get_json()["error"]), answer.get_json()  # names the field
    assert docstore.get("users/alice") is None


def test_the_admin_sets_and_reads_a_users_money_caps(client_of: Any, docstore: DocStore) -> None:
    _, client = client_of(budget_user_daily_usd=1.0, budget_user_monthly_usd=5.0)
    assert limits(client, "alice") | {} == {"activeRuns": None, "activeSessions": None, "dailyTokens": None,
                                           "dailyBudgetUsd": None, "monthlyBudgetUsd": None}
    for headers in (ALICE, BOB):  # not the admin: refused, even for one's own caps
        refused = client.patch("/api/admin/users/alice", json={"limits": {"monthlyBudgetUsd": 100}}, headers=headers)
        assert refused.status_code == 403 and refused.get_json()["error"]["code"] == "ADMIN_ONLY"
        assert client.get("/api/admin/users/alice", headers=headers).status_code == 403
    assert docstore.get("users/alice") is None
    assert client.get("/api/admin/users/not%20a%20uid", headers=ADMIN).status_code == 404

    changed = client.patch("/api/admin/users/alice", json={"limits": {"monthlyBudgetUsd": 0.01}}, headers=ADMIN)
    assert changed.status_code == 200, changed.get_json()
    assert changed.get_json()["limits"]["monthlyBudgetUsd"] == 0.01
    both = client.patch("/api/admin/users/alice", json={"limits": {"dailyBudgetUsd": 2}}, headers=ADMIN)
    assert both.get_json()["limits"] | {} == {"activeRuns": None, "activeSessions": None, "dailyTokens": None,
                                              "dailyBudgetUsd": 2.0, "monthlyBudgetUsd": 0.01}  # the other stays
    assert limits(client, "alice")["monthlyBudgetUsd"] == 0.01 and limits(client, "bob")["monthlyBudgetUsd"] is None
    # What the user sees: their own caps; bob the deployment's.
    alice = client.get("/api/agent/usage", headers=ALICE).get_json()["budget"]
    assert alice["monthlyCapUsd"] == 0.01 and alice["dailyCapUsd"] == 2.0
    bob = client.get("/api/agent/usage", headers=BOB).get_json()["budget"]
    assert bob["monthlyCapUsd"] == 5.0 and bob["dailyCapUsd"] == 1.0
    off = client.patch("/api/admin/users/alice", json={"limits": {"dailyBudgetUsd": 0}}, headers=ADMIN)
    assert off.status_code == 200  # 0: no daily cap for alice
    assert client.get("/api/agent/usage", headers=ALICE).get_json()["budget"].get("dailyCapUsd") is None
    back = client.patch("/api/admin/users/alice", json={"limits": {"dailyBudgetUsd": None}}, headers=ADMIN)
    assert back.get_json()["limits"]["dailyBudgetUsd"] is None  # null: the deployment's again
    assert client.get("/api/agent/usage", headers=ALICE).get_json()["budget"]["dailyCapUsd"] == 1.0


def test_a_money_cap_the_deployment_does_not_have_is_refused(client_of: Any, docstore: DocStore) -> None:
    _, client = client_of(budget_user_daily_usd=1.0)  # no monthly cap in this deployment
    refused = client.patch("/api/admin/users/alice", json={"limits": {"monthlyBudgetUsd": 0.01}}, headers=ADMIN)
    assert refused.status_code == 400
    error = refused.get_json()["error"]
    assert error["code"] == "BUDGET_CAP_OFF" and "BUDGET_USER_MONTHLY_USD" in error["message"]
    assert docstore.get("users/alice") is None
    assert client.patch("/api/admin/users/alice", json={"limits": {"dailyBudgetUsd": 0.5}},
                        headers=ADMIN).status_code == 200


def test_a_users_monthly_cap_pauses_their_runs_and_the_next_month_starts_afresh(client_of: Any) -> None:
    now = [JANUARY]
    rt, client = client_of(budget_user_monthly_usd=1.0)
    rt.services.clock = lambda: now[0]
    assert client.patch("/api/admin/users/alice", json={"limits": {"monthlyBudgetUsd": 0.01}},
                        headers=ADMIN).status_code == 200
    for uid in ("alice", "bob"):  # both spent $0.008 earlier this month (a call costs at most ~$0.0073)
        spend(rt, uid, 0.008, EARLIER_IN_JANUARY)
    spend(rt, "alice", 0.5, datetime(2030, 12, 20, tzinfo=UTC).timestamp())  # last month's: not this month's

    paused = client.post("/api/agent/run", json={"prompt": "count m1"}, headers=ALICE).get_json()
    assert paused["status"] == "awaiting_confirmation", paused
    [pending] = [a for a in client.get("/api/agent/approvals", headers=ALICE).get_json()["approvals"]
                 if a["status"] == "pending"]
    assert pending["kind"] == "budget" and pending["budgetScope"] == "user_month"
    assert pending["limitUsd"] == 0.01 and pending["spentUsd"] == pytest.approx(0.008)
    assert "monthly budget" in pending["preview"]
    # Bob's cap is the deployment's ($1): the same spend leaves him room.
    assert client.post("/api/agent/run", json={"prompt": "count m2"}, headers=BOB).get_json()["status"] == "completed"

    # Approving raises alice's cap of January only; her run goes on.
    decide(rt, pending["approvalId"], "approve")
    deliver(rt)
    january = client.get("/api/agent/usage", headers=ALICE).get_json()["budget"]
    assert january["monthlyCapUsd"] == pending["proposedLimitUsd"] and january["spentThisMonthUsd"] >= 0.008
    run = client.get(f"/api/agent/runs/{paused['runId']}", headers=ALICE).get_json()
    assert run["status"] in ("completed", "awaiting_confirmation") and run["costUsd"] > 0

    # February: the month's counter starts at 0 and the cap is her own again ($0.01), not January's raise.
    now[0] = FEBRUARY
    february = client.get("/api/agent/usage", headers=ALICE).get_json()["budget"]
    assert february["monthlyCapUsd"] == 0.01 and february["spentThisMonthUsd"] == 0
    fresh = client.post("/api/agent/run", json={"prompt": "count m3"}, headers=ALICE).get_json()
    assert fresh["status"] == "completed", fresh  # January's $0.008 no longer counts


def test_an_old_month_counter_larger_than_its_days_counts(client_of: Any, docstore: DocStore) -> None:
    """A ``usageMonths/{month}`` counter written by earlier code (issue 30 to issue 33's third
    session) holding more than the month's day counters (e.g. day counters lost): the month's spend
    is the larger of the two, for the check before a model call and for the usage view; a smaller
    one changes nothing; last month's old counter is not this month's."""
    from shared.state import paths
    from shared.state.docstore import Write

    now = [JANUARY]
    rt, client = client_of(budget_user_monthly_usd=0.01)
    rt.services.clock = lambda: now[0]
    spend(rt, "alice", 0.001, EARLIER_IN_JANUARY)  # the days' sum: $0.001
    spend(rt, "bob", 0.002, EARLIER_IN_JANUARY)
    docstore.commit([Write("set", paths.usage_month("alice", "2031-01"), {"costMicroUsd": 9_000}),  # $0.009
                     Write("set", paths.usage_month("bob", "2031-01"), {"costMicroUsd": 1_000}),  # < his days
                     Write("set", paths.usage_month("bob", "2030-12"), {"costMicroUsd": 50_000})])  # last month
    assert client.get("/api/agent/usage", headers=ALICE).get_json()["budget"]["spentThisMonthUsd"] == pytest.approx(
        0.009)
    assert client.get("/api/agent/usage", headers=BOB).get_json()["budget"]["spentThisMonthUsd"] == pytest.approx(
        0.002)
    paused = client.post("/api/agent/run", json={"prompt": "count o1"}, headers=ALICE).get_json()
    assert paused["status"] == "awaiting_confirmation", paused  # $0.009 + a call's up to ~$0.0073 > $0.01
    [pending] = [a for a in client.get("/api/agent/approvals", headers=ALICE).get_json()["approvals"]
                 if a["status"] == "pending"]
    assert pending["budgetScope"] == "user_month" and pending["spentUsd"] == pytest.approx(0.009)
    # Bob: his days' $0.002 counts, not his smaller old counter nor last month's.
    assert client.post("/api/agent/run", json={"prompt": "count o2"}, headers=BOB).get_json()["status"] == "completed"
