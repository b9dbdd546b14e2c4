"""The per-user money budgets' state (docs/budgets.md): ``users/{uid}/limits/budget`` =
``{reserved: {callId: {usd, at}}, dayCaps: {YYYY-MM-DD: usd}, monthCaps: {YYYY-MM: usd}}``.

``reserved`` holds the maximum cost of the user's model calls in flight; ``dayCaps`` /
``monthCaps`` the limits the user raised by approving a budget approval. A user's cap of a period
is the larger of that raise and the user's own cap (``users/{uid}.limits.dailyBudgetUsd`` /
``monthlyBudgetUsd``, set by the admin API; 0: off for the user) or else the configured
``BUDGET_USER_DAILY_USD`` / ``BUDGET_USER_MONTHLY_USD``; a cap the deployment turned off (0) is off
for everyone and costs nothing. What was spent is the ledger's: the day counters
``usageDays/{day}.costMicroUsd``, incremented in the same commit as each ledger entry
(``usage_repo.entry_writes``); the month's is the sum of its days' counters, read in one
``get_many`` (at most 31 documents, one round trip; only when a monthly cap is configured). A
month counter ``usageMonths/{month}`` written by earlier code (issue 30 to issue 33's third session)
is read beside them and counts when larger (it was moved with the same days' counters, so it never
is unless day counters were lost). The periods are UTC days and months of the repository's
``clock`` (tests move it).

:meth:`BudgetRepo.reserve` reads this document first, then the counters, and adds the call
with a write conditioned on the document as read: a concurrent reservation makes it read again,
so the check and the reservation are one atomic step (optimistic, like the active-run slots of
``limits_repo``: no transaction holds the per-user document while the model answers). A call's
reservation is released after the commit that wrote its ledger entry; until then it counts twice
(its cost in the counter and its reservation), which can only refuse early, never overshoot. A
reservation whose invocation died counts until ``ttl_s`` passed.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any, Literal

from shared.errors import PreconditionFailed, TransactionContention
from shared.state import paths
from shared.state.docstore import Doc, DocStore, Write
from shared.state.record_base import field_count, finite

RESERVE_ATTEMPTS = 12
BACKOFF_S = 0.005
"""After the n-th lost race a reservation waits a random time up to ``BACKOFF_S * 2**n`` (at most
``BACKOFF_MAX_S``) before reading again: without it, a user's 20 concurrent runs on a loaded
machine kept colliding and a run failed with TransactionContention (``make reliability``, session 4)."""
BACKOFF_MAX_S = 0.25
BUDGET_DOC = "budget"
MICRO = 1_000_000


CapScope = Literal["user_day", "user_month"]
OWN_CAPS = {"user_day": "dailyBudgetUsd", "user_month": "monthlyBudgetUsd"}
"""The user's own caps in ``users/{uid}.limits`` (the admin API)."""


@dataclass(frozen=True)
class CapReached:
    """A user's cap that has no room for a call: which, the cap, and what was spent and held."""

    scope: CapScope
    cap_usd: float
    spent_usd: float


def day_and_month(at: float) -> tuple[str, str]:
    """The UTC day (``YYYY-MM-DD``) and month (``YYYY-MM``) of ``at``."""
    day = datetime.fromtimestamp(at, UTC).date().isoformat()
    return day, day[:7]


def _micro(doc: Doc | None) -> int:
    return field_count(doc.data if doc is not None else None, "costMicroUsd")


def month_paths(uid: str, day: str) -> list[str]:
    """What the month of ``day`` spent up to it is read from: its days' counters from the 1st to
    ``day``, then the month's old counter (written before issue 33's third session, if any)."""
    first = date.fromisoformat(day[:7] + "-01")
    days = [(first + timedelta(days=n)).isoformat() for n in range(int(day[8:10]))]
    return [*(paths.usage_day(uid, d) for d in days), paths.usage_month(uid, day[:7])]


def month_micro(docs: list[Doc | None]) -> int:
    """The month's spend from the documents of :func:`month_paths` (in that order): the sum of its
    days' counters, or the old month counter when larger."""
    *days, legacy = docs
    return max(sum(_micro(d) for d in days), _micro(legacy))


def _caps(doc: Doc | None, field: str) -> dict[str, float]:
    """A map of caps; an entry that is not a finite number is left out (a corrupt value caps nothing)."""
    raw = doc.data.get(field) if doc is not None else None
    return {str(k): n for k, v in raw.items() if (n := finite(v)) is not None} if isinstance(raw, dict) else {}


def _own_cap(user: Doc | None, scope: CapScope, configured: float) -> float:
    """The user's own cap of ``scope`` (the admin's), or the configured one; the configured 0 stays off."""
    if not configured:
        return 0.0
    limits = user.data.get("limits") if user is not None else None
    value = limits.get(OWN_CAPS[scope]) if isinstance(limits, dict) else None
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return float(value)
    return configured


def _cap(user: Doc | None, budget: Doc | None, scope: CapScope, period: str, configured: float) -> float:
    """The cap of ``scope`` for ``period``: the user's own (or the configured) one, or what an
    approval raised it to if more; 0: no cap."""
    own = _own_cap(user, scope, configured)
    if not own:
        return 0.0
    raised = _caps(budget, "dayCaps" if scope == "user_day" else "monthCaps").get(period, 0.0)
    return max(own, raised)


def _reserved(doc: Doc | None, at: float, ttl_s: float) -> dict[str, dict[str, float]]:
    raw = doc.data.get("reserved") if doc is not None else None
    if not isinstance(raw, dict):
        return {}
    out: dict[str, dict[str, float]] = {}
    for k, v in raw.items():  # an entry that is not {usd, at} with finite numbers is left out (corrupt)
        usd, when = (finite(v.get("usd")), finite(v.get("at"))) if isinstance(v, dict) else (None, None)
        if usd is not None and when is not None and at - when <= ttl_s:
            out[str(k)] = {"usd": usd, "at": when}
    return out


def _backoff(attempt: int) -> None:
    """Full jitter: the calls that lost a race spread out instead of colliding again."""
    time.sleep(random.uniform(0, min(BACKOFF_MAX_S, BACKOFF_S * 2 ** attempt)))


class BudgetRepo:
    def __init__(self, store: DocStore, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.clock = clock

    def spent(self, uid: str) -> tuple[float, float]:
        """What the user spent on the current UTC day and month, in USD."""
        day, _month = day_and_month(self.clock())
        docs = self.store.get_many(month_paths(uid, day))  # today's counter is the last day's
        return _micro(docs[-2]) / MICRO, month_micro(docs) / MICRO

    def caps(self, uid: str, daily_usd: float, monthly_usd: float) -> tuple[float, float]:
        """The user's daily and monthly caps now (0: none): their own or the configured ones, or
        what an approval raised them to (one round trip; none when the deployment has no cap)."""
        if not daily_usd and not monthly_usd:
            return 0.0, 0.0  # no cap: nothing to read
        day, month = day_and_month(self.clock())
        budget, user = self.store.get_many([paths.limit(uid, BUDGET_DOC), paths.user(uid)])
        return (_cap(user, budget, "user_day", day, daily_usd), _cap(user, budget, "user_month", month, monthly_usd))

    def reserve(self, uid: str, call_id: str, usd: float, *, daily_usd: float, monthly_usd: float,
                ttl_s: float) -> CapReached | None:
        """Reserve ``usd`` for the call ``call_id`` if the user's caps leave room (counting the calls
        in flight); else the overrun (nothing written). 0 turns a cap off."""
        path = paths.limit(uid, BUDGET_DOC)
        for attempt in range(RESERVE_ATTEMPTS):
            at = self.clock()
            day, month = day_and_month(at)
            doc = self.store.get(path)  # first: a reservation released meanwhile is in the counters read next
            # The user, then today's counter, or the month's counters (today's the last day's) when capped.
            counters = month_paths(uid, day) if monthly_usd else [paths.usage_day(uid, day)]
            user, *docs = self.store.get_many([paths.user(uid), *counters])
            day_micro = _micro(docs[-2] if monthly_usd else docs[-1])
            live = _reserved(doc, at, ttl_s)
            held = sum(r["usd"] for r in live.values())
            periods: tuple[tuple[CapScope, float, str, int], ...] = (
                ("user_day", daily_usd, day, day_micro),
                ("user_month", monthly_usd, month, month_micro(docs) if monthly_usd else 0))
            for scope, configured, period, spent in periods:
                cap = _cap(user, doc, scope, period, configured)
                if cap and spent / MICRO + held + usd > cap:
                    return CapReached(scope, cap, round(spent / MICRO + held, 8))
            data: dict[str, Any] = {**(doc.data if doc is not None else {}), "updatedAt": at,
                                    "reserved": {**live, call_id: {"usd": usd, "at": at}}}
            write = Write("create", path, data) if doc is None else Write("set", path, data, if_token=doc.token)
            try:
                self.store.commit([write])
            except PreconditionFailed:
                _backoff(attempt)  # another call of this user reserved (or released) first: read again
            return None
        raise TransactionContention(f"the budget reservations of {uid} kept changing")

    def release(self, uid: str, call_id: str) -> None:
        """Drop a call's reservation once its ledger entry is committed (best effort: one left
        behind counts until it is older than the reservation time-to-live)."""
        path = paths.limit(uid, BUDGET_DOC)
        for attempt in range(RESERVE_ATTEMPTS):
            doc = self.store.get(path)
            raw = doc.data.get("reserved") if doc is not None else None
            if doc is None or not isinstance(raw, dict) or call_id not in raw:
                return
            data = {**doc.data, "reserved": {k: v for k, v in raw.items() if k != call_id}, "updatedAt": self.clock()}
            try:
                self.store.commit([Write("set", path, data, if_token=doc.token)])
                return
            except PreconditionFailed:
                _backoff(attempt)

    def raise_cap(self, uid: str, scope: str, usd: float) -> None:
        """An approved budget approval: the user's cap of this day (or month) becomes ``usd``
        (never lowered by a later, smaller approval)."""
        field = {"user_day": "dayCaps", "user_month": "monthCaps"}.get(scope)
        if field is None:
            return
        day, month = day_and_month(self.clock())
        key = day if scope == "user_day" else month
        path = paths.limit(uid, BUDGET_DOC)
        for attempt in range(RESERVE_ATTEMPTS):
            doc = self.store.get(path)
            caps = _caps(doc, field)
            if caps.get(key, 0.0) >= usd:
                return
            data = {**(doc.data if doc is not None else {}), field: {**caps, key: usd}, "updatedAt": self.clock()}
            write = Write("create", path, data) if doc is None else Write("set", path, data, if_token=doc.token)
            try:
                self.store.commit([write])
                return
            except PreconditionFailed:
                _backoff(attempt)
        raise TransactionContention(f"the budget caps of {uid} kept changing")
