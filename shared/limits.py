"""Per-user limits (cost and abuse control, docs/limits.md): what is checked, when, and the 429s.

- ``admit_request``: every authenticated API request (``functions/common.py``) counts against
  ``LIMIT_REQUESTS_PER_MINUTE`` in fixed one-minute windows -> 429 ``RATE_LIMITED``. Every request
  counts in the instance's own memory; a request that may write (any method but GET/HEAD) also
  counts in the user's counter document, exactly across instances. A read costs no store round trip
  and no document write (issue 33): a console polling a run never contends on that document.
- ``check_daily_tokens``: before new model work is started for a request (a run, a plan session,
  a refinement, a confirmation) the user's tokens of the UTC day, read from the day's counter that
  every usage-ledger entry moves in its own commit, must be below ``LIMIT_DAILY_TOKENS`` -> 429 ``DAILY_TOKEN_LIMIT``.
- ``slot``: active chat runs (``LIMIT_ACTIVE_RUNS``) and plan sessions (``LIMIT_ACTIVE_SESSIONS``):
  a slot is reserved just before the unit is created (``Slot.reserve``) or the creation is refused -> 429
  ``TOO_MANY_ACTIVE_RUNS`` / ``TOO_MANY_ACTIVE_SESSIONS``. Plan sessions are also checked before
  their planning model call (``Slot.check``), so a refused session costs no tokens.

Every refusal happens before anything of the unit is written. A limit set to 0 is off and costs
nothing (no read, no write). ``start_paths`` names the documents the checks of a start read, so the
start reads them (with its own) in one round trip (``BatchedReads``, issue 33) and passes the batch in.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from shared.config import Settings
from shared.errors import LimitExceeded, StoreError, TransactionContention
from shared.state.batched_reads import BatchedReads, read, read_together
from shared.state.docstore import Doc, Write
from shared.state.limits_repo import LimitsRepo, RequestGuard, Slot, UnitKind

if TYPE_CHECKING:
    from shared.state.usage_repo import UsageRepo

log = logging.getLogger("agent_runtime.limits")

WINDOW_S = 60
RUNS_RETRY_AFTER_S = 10.0
"""The hint of a TOO_MANY_ACTIVE_RUNS refusal: a chat run usually ends within its invocation."""
SESSIONS_RETRY_AFTER_S = 60.0
"""The hint of a TOO_MANY_ACTIVE_SESSIONS refusal: plan sessions run for minutes."""


class Limits:
    """The limits of one process; ``clock`` (epoch seconds) is replaceable so tests can move time.
    ``usage`` gives the usage ledger on first need (counting requests never loads it)."""

    def __init__(self, settings: Settings, repo: LimitsRepo, usage: Callable[[], UsageRepo],
                 clock: Callable[[], float] = time.time) -> None:
        self.settings = settings
        self.repo = repo
        self.usage = usage
        self.clock = clock
        self._local = _LocalWindows()

    def _for_user(self, uid: str, name: str, default: int, batch: BatchedReads | None = None) -> int:
        """The deployment's limit, or the user's own (set by the admin API; 0: off for the user). A
        limit the deployment turned off (0) stays off and costs nothing; otherwise one more read
        (none when ``batch`` holds the user's document)."""
        if default <= 0:
            return default
        own = self.repo.user_limit(uid, name, batch=batch)
        return default if own is None else own

    def start_paths(self, uid: str, kind: UnitKind) -> list[str]:
        """The documents :meth:`check_daily_tokens` and :meth:`slot` of ``kind`` read for a start of
        ``uid`` now (none when both limits are off): to be read in one batch with the start's own."""
        s = self.settings
        day = datetime.fromtimestamp(self.clock(), UTC).date().isoformat() if s.limit_daily_tokens > 0 else None
        active = (s.limit_active_runs if kind == "runs" else s.limit_active_sessions) > 0
        return self.repo.start_paths(uid, kind, day=day, active=active)

    def read_for_start(self, uid: str, kind: UnitKind, *, also: Sequence[str] = ()) -> BatchedReads | None:
        """:meth:`start_paths` and ``also`` read in one round trip, for the checks of the start to use."""
        return read_together(self.repo.store, [*also, *self.start_paths(uid, kind)])

    # ---- requests per minute -----------------------------------------------------------------
    def admit_request(self, uid: str, *, read: bool = False, deferred: bool = False) -> DeferredRequest | None:
        """Count one API request of ``uid``, or refuse it (429 ``RATE_LIMITED``, nothing counted).
        Every request is counted in this instance's memory; one that may write (``read`` false) is
        then counted in the user's counter document too, so writes are limited exactly across
        instances while reads cost no store round trip. ``deferred``: the request starts work whose
        creating commit counts it (:class:`DeferredRequest`, issue 33): returned, not counted yet."""
        limit = self.settings.limit_requests_per_minute
        if limit <= 0:
            return None
        at = self.clock()
        window = int(at // WINDOW_S)
        if not self._local.admit(uid, window, limit):
            raise self._rate_limited(limit, at)
        if read:
            return None
        if deferred:
            return DeferredRequest(self, uid, window, limit, at)
        self._count_in_store(uid, window, limit, at)
        return None

    def _rate_limited(self, limit: int, at: float) -> LimitExceeded:
        retry_after = (int(at // WINDOW_S) + 1) * WINDOW_S - at
        return LimitExceeded(f"more than {limit} requests in one minute; retry in {math.ceil(retry_after)} s",
                             code="RATE_LIMITED", retry_after_s=retry_after,
                             details={"limit": limit, "windowS": WINDOW_S})

    def _count_in_store(self, uid: str, window: int, limit: int, at: float) -> None:
        try:
            counted = self.repo.count_request(uid, window, limit)
        except TransactionContention:
            # So many concurrent requests of one user that the counter could not be moved.
            raise LimitExceeded("too many concurrent requests; retry shortly", code="RATE_LIMITED",
                                  retry_after_s=1, details={"limit": limit, "windowS": WINDOW_S}) from None
        except StoreError:
            # The counter cannot be written (an outage, a missing permission): the request goes on
            # rather than every route failing with it; loudly, since only this instance's count
            # limits the user meanwhile.
            log.error("request limit not applied across instances: the counter could not be written", exc_info=True)
            return
        if not counted.admitted:
            raise self._rate_limited(limit, at)

    # ---- model tokens per day ----------------------------------------------------------------
    def check_daily_tokens(self, uid: str, *, replayed: Callable[[], bool] | None = None,
                           batch: BatchedReads | None = None) -> None:
        """Refuse new work when the user's tokens of the current UTC day reached the limit (429
        ``DAILY_TOKEN_LIMIT``, ``Retry-After`` = seconds to midnight UTC). ``replayed``: whether the
        request repeats one that already started its work (an Idempotency-Key seen): those get their
        earlier answer, never a refusal. One document read per check, whatever the day's calls
        (served by ``batch`` when it holds it, :meth:`start_paths`)."""
        limit = self._for_user(uid, "dailyTokens", self.settings.limit_daily_tokens, batch)
        if limit <= 0:
            return
        at = datetime.fromtimestamp(self.clock(), UTC)
        day = at.date()
        used = self.usage().tokens_on(uid, day.isoformat(), batch=batch)
        if used < limit or (replayed is not None and replayed()):
            return
        midnight = datetime(day.year, day.month, day.day, tzinfo=UTC) + timedelta(days=1)
        raise LimitExceeded(f"{used} model tokens used today (UTC); the daily limit is {limit}",
                              code="DAILY_TOKEN_LIMIT", retry_after_s=(midnight - at).total_seconds(),
                              details={"limit": limit, "used": used, "day": day.isoformat(),
                                       "resetsAt": midnight.isoformat().replace("+00:00", "Z")})

    # ---- active runs and sessions ------------------------------------------------------------
    def slot(self, uid: str, kind: UnitKind, *, batch: BatchedReads | None = None) -> Slot | None:
        """The limit on ``uid``'s active units of ``kind``, read for the creation to reserve (two
        reads, one when ``batch`` holds the slot document); None when the limit is off."""
        default = self.settings.limit_active_runs if kind == "runs" else self.settings.limit_active_sessions
        limit = self._for_user(uid, "activeRuns" if kind == "runs" else "activeSessions", default, batch)
        if limit <= 0:
            return None
        return Slot(uid=uid, limit=limit, seen=self.repo.active_units(uid, kind, batch=batch, limit=limit),
                    store=self.repo.store,
                    retry_after_s=RUNS_RETRY_AFTER_S if kind == "runs" else SESSIONS_RETRY_AFTER_S)


@dataclass
class DeferredRequest:
    """A request counted in this instance's memory whose count in the user's counter document is
    left to the commit that starts its work (issue 33: the start reads the counter with its other
    documents and writes it in its own commit, two round trips less). :meth:`guard` is that write;
    a request whose start wrote none (refused, replayed, failed) is counted by :meth:`settle` as
    every other request is, so every request counts, exactly across instances."""

    _limits: Limits
    uid: str
    _window: int
    _limit: int
    _at: float
    counted: bool = False

    def paths(self) -> list[str]:
        """The counter document (for the start's batched read)."""
        return [self._limits.repo.counter_path(self.uid)]

    def guard(self, batch: BatchedReads | None) -> RequestGuard:
        """The count as the start's commit writes it; refuses now (429 ``RATE_LIMITED``, nothing
        written) when the window's requests reached the limit."""
        store = self._limits.repo.store
        guard = RequestGuard(store, self.uid, self._window, self._limit,
                             read(store, self._limits.repo.counter_path(self.uid), batch),
                             lambda: self._limits._rate_limited(self._limit, self._at))
        guard.write(False)  # the check before anything else of the start
        return guard

    def write_for(self, doc: Doc | None) -> Write:
        """The count as a transaction writes it from the counter ``doc`` it read (an approve's
        decision, issue 33); refuses (429 ``RATE_LIMITED``, nothing written) when the window's
        requests reached the limit."""
        store = self._limits.repo.store
        return RequestGuard(store, self.uid, self._window, self._limit, doc,
                            lambda: self._limits._rate_limited(self._limit, self._at)).write(False)

    def committed(self) -> None:
        """The start's commit wrote the count."""
        self.counted = True

    def settle(self) -> None:
        """Count the request in the store unless its start did (may raise 429 ``RATE_LIMITED``)."""
        if not self.counted:
            self.counted = True
            self._limits._count_in_store(self.uid, self._window, self._limit, self._at)


class _LocalWindows:
    """This instance's request counts per user in the current minute (fixed windows, as the
    counter document). Bounded: users of earlier windows are dropped when it grows."""

    MAX_USERS = 10_000

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, tuple[int, int]] = {}

    def admit(self, uid: str, window: int, limit: int) -> bool:
        with self._lock:
            seen_window, count = self._counts.get(uid, (window, 0))
            if seen_window != window:
                count = 0
            if count >= limit:
                return False
            if len(self._counts) >= self.MAX_USERS and uid not in self._counts:
                self._counts = {u: c for u, c in self._counts.items() if c[0] == window}
            self._counts[uid] = (window, count + 1)
            return True
