"""The state of the per-user limits (docs/limits.md): ``users/{uid}/limits/{requests|runs|sessions}``.

- ``requests``: ``{window, count}``, the requests admitted in the current one-minute window. Each
  admitted request moves it with a conditional write (the token read), so instances that share
  nothing but the store never admit more than the limit per window; a lost race reads again.
- ``runs`` / ``sessions``: ``{ids, reserved}``, the units this user started that were active when
  last looked at, and when each was reserved. Creating a unit first reserves a slot (``reserve``):
  when the list is full (as many ids as the limit), the listed units are read and the ids whose
  unit has ended since are dropped (a shorter list needs no read: however many of them ended, the
  user is below the limit); the rest are counted, and the new id is added with a
  conditional write on this document, or the creation is refused before anything of it is written.
  Two creations racing for the last slot both write this document, so one of them reads again and
  sees the other: the limit holds across instances. The reservation is optimistic (no transaction
  holds this per-user document while the unit is created: concurrent starts of one user would queue
  on its lock, and the Firestore emulator's pessimistic locks even time out). A listed id whose unit
  does not exist yet counts as active for ``RESERVATION_TTL_S`` (its creation may be in flight),
  then as ended; a creation that fails releases its reservation at once (best effort). Nothing is
  released when a unit ends: the next reservation that finds the list full notices.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from typing import Literal, Protocol, TypeVar

from shared.errors import LimitExceeded, PreconditionFailed, TransactionContention
from shared.state import paths
from shared.state.batched_reads import BatchedReads, read
from shared.state.docstore import Doc, DocStore, Write
from shared.state.record_base import field_count, finite

UnitKind = Literal["runs", "sessions"]
T = TypeVar("T")
REQUEST_ATTEMPTS = 5
RESERVE_ATTEMPTS = 8
RESERVATION_TTL_S = 120.0
"""How long a reserved id whose unit does not exist counts as active (its creating transaction may
still be running); after that it is a creation that failed without releasing it."""
_CODES: dict[UnitKind, str] = {"runs": "TOO_MANY_ACTIVE_RUNS", "sessions": "TOO_MANY_ACTIVE_SESSIONS"}
_NOUNS: dict[UnitKind, str] = {"runs": "chat runs", "sessions": "plan sessions"}
_WAITING: dict[UnitKind, str] = {"runs": "awaiting_confirmation", "sessions": "awaiting_confirmation"}
_ADVICE: dict[UnitKind, str] = {
    "runs": "Wait until one completes, or decide the approvals of those waiting (details.waiting).",
    "sessions": "Wait until one ends, or confirm or cancel those awaiting confirmation (details.waiting)."}


def _terminal(kind: UnitKind) -> frozenset[str]:
    # Imported here: counting requests (every route) must not load the records (cold start).
    if kind == "runs":
        from shared.state.records import TERMINAL_RUN_STATUSES

        return TERMINAL_RUN_STATUSES
    from shared.state.plan_records import TERMINAL_SESSION_STATUSES

    return TERMINAL_SESSION_STATUSES


def _reserved(doc: Doc | None) -> dict[str, float]:
    """The reservations of a counter document; an entry that is not a finite number is left out (a
    corrupt value must not refuse every later start of the user)."""
    raw = doc.data.get("reserved") if doc is not None else None
    return {str(k): n for k, v in raw.items() if (n := finite(v)) is not None} if isinstance(raw, dict) else {}


def _unit_path(kind: UnitKind, unit_id: str) -> str:
    return paths.run(unit_id) if kind == "runs" else paths.session(unit_id)


@dataclass(frozen=True)
class RequestCount:
    admitted: bool
    count: int
    """Requests admitted in the window (this one included when admitted)."""


@dataclass(frozen=True)
class ActiveUnits:
    """What a user's slot document listed when read before the creating transaction, and which of
    those units had ended by then (read outside the transaction: a unit that has ended stays ended,
    so this can only over-count a unit that ends meanwhile, never let one too many in)."""

    kind: UnitKind
    listed: tuple[str, ...]
    ended: frozenset[str]
    waiting: frozenset[str]
    """Units paused for the user (an approval, a plan confirmation): named in the refusal."""
    doc: Doc | None = None
    """The slot document as read: the reservation's first attempt writes on its token (a stale one
    fails the conditional write, and the next attempt reads the document again)."""
    checked: frozenset[str] | None = None
    """The listed units whose state was read (None: all of ``listed``). A list shorter than the
    limit needs no unit read (issue 33: one round trip less per start): however many of them have
    ended, the user is below the limit; their states are read when the list is full."""

    def unchecked(self, ids: Collection[str]) -> bool:
        return self.checked is not None and any(i not in self.checked for i in ids)

    def active(self, listed: Collection[str], *, also_ended: Collection[str] = (), new_id: str = "") -> list[str]:
        return [i for i in listed if i not in self.ended and i not in also_ended and i != new_id]


@dataclass
class Slot:
    """A limit on a user's active units of one kind, to be reserved before the creating transaction."""

    uid: str
    limit: int
    seen: ActiveUnits
    retry_after_s: float
    store: DocStore

    def check(self) -> None:
        """Refuse now if the user has no room left (no write: a pre-check before costly work)."""
        active = self.seen.active(self.seen.listed)
        if len(active) >= self.limit and self.seen.unchecked(active):
            self.seen = unit_states(self.store, self.uid, self.seen.kind, self.seen.listed, self.seen.doc)
            active = self.seen.active(self.seen.listed)
        self._refuse_if_full(active)

    def reserve(self, unit_id: str, *, also_ended: Collection[str] = ()) -> None:
        """Before the transaction creating ``unit_id``: count the user's active units and add it, or
        raise LimitExceeded (nothing written). ``also_ended``: units the creation will end (a
        superseded pause). Raises TransactionContention when concurrent creations of the user kept
        winning the race."""
        commit_guarded([self.reservation(unit_id, also_ended=also_ended)], self.store.commit,
                       what=f"the {self.seen.kind} slots of {self.uid}")

    def reservation(self, unit_id: str, *, also_ended: Collection[str] = ()) -> Guard:
        """The reservation of ``unit_id`` as a :class:`Guard`: its write goes into the commit creating
        the unit (issue 33: one commit, nothing to release when the creation fails)."""
        return _Reservation(self, unit_id, tuple(also_ended))

    def reservation_write(self, unit_id: str, also_ended: Collection[str], fresh: bool) -> Write:
        """The slot document with ``unit_id`` added, conditioned on the document as counted; raises
        LimitExceeded (nothing written) when the user has no room left."""
        path = paths.limit(self.uid, self.seen.kind)
        doc = self.seen.doc if not fresh and self.seen.doc is not None else self.store.get(path)
        listed = [str(i) for i in doc.data.get("ids", [])] if doc is not None else []
        reserved = _reserved(doc)
        kept = self.seen.active(listed, new_id=unit_id)
        counted = [i for i in kept if i not in also_ended]
        if len(counted) >= self.limit and self.seen.unchecked(counted):  # full as listed: which ended?
            self.seen = replace(unit_states(self.store, self.uid, self.seen.kind, listed, doc), doc=self.seen.doc)
            kept = self.seen.active(listed, new_id=unit_id)
            counted = [i for i in kept if i not in also_ended]
        # A unit the creation will end does not count, but stays listed: should the creation
        # fail to end it, the next reservation still counts it.
        self._refuse_if_full(counted)
        at = time.time()
        data = {"ids": [*kept, unit_id], "updatedAt": at,
                "reserved": {**{i: t for i, t in reserved.items() if i in kept and at - t <= RESERVATION_TTL_S},
                             unit_id: at}}
        return Write("create", path, data) if doc is None else Write("set", path, data, if_token=doc.token)

    def release(self, unit_id: str) -> None:
        """Give back the reservation of a unit whose creation failed (best effort: an unreleased one
        counts until ``RESERVATION_TTL_S`` has passed)."""
        path = paths.limit(self.uid, self.seen.kind)
        for _ in range(3):
            doc = self.store.get(path)
            listed = [str(i) for i in doc.data.get("ids", [])] if doc is not None else []
            if unit_id not in listed or doc is None:
                return
            reserved = {i: t for i, t in _reserved(doc).items() if i != unit_id}
            data = {"ids": [i for i in listed if i != unit_id], "reserved": reserved, "updatedAt": time.time()}
            try:
                self.store.commit([Write("set", path, data, if_token=doc.token)])
                return
            except PreconditionFailed:
                continue

    def _refuse_if_full(self, active: list[str]) -> None:
        if len(active) < self.limit:
            return
        kind = self.seen.kind
        raise LimitExceeded(
            f"{len(active)} {_NOUNS[kind]} are active; the limit is {self.limit}. {_ADVICE[kind]}",
            code=_CODES[kind], retry_after_s=self.retry_after_s,
            details={"limit": self.limit, "active": active, "waiting": [i for i in active if i in self.seen.waiting]})


class Guard(Protocol):
    """A limit's document written with the commit that starts the work it limits (issue 33): the
    write is conditioned on the document as read, so a rival start fails the whole commit."""

    def write(self, fresh: bool) -> Write:
        """The guarded document's new state, or LimitExceeded (nothing written). ``fresh``: read the
        document again (the previous attempt's commit failed its condition)."""
        ...


@dataclass(frozen=True)
class _Reservation:
    slot: Slot
    unit_id: str
    also_ended: tuple[str, ...]

    def write(self, fresh: bool) -> Write:
        return self.slot.reservation_write(self.unit_id, self.also_ended, fresh)


@dataclass(frozen=True)
class RequestGuard:
    """One more request of ``uid`` in ``window`` on the counter document (``doc``, as read), or a
    refusal from ``refuse`` when ``limit`` requests were counted in it already."""

    store: DocStore
    uid: str
    window: int
    limit: int
    doc: Doc | None
    refuse: Callable[[], Exception]

    def write(self, fresh: bool) -> Write:
        doc = self.store.get(paths.limit(self.uid, "requests")) if fresh else self.doc
        write = request_write(paths.limit(self.uid, "requests"), doc, self.window, self.limit)
        if write is None:
            raise self.refuse()
        return write


def request_write(path: str, doc: Doc | None, window: int, limit: int) -> Write | None:
    """The counter document ``doc`` (at ``path``) with one more request in ``window``, conditioned on
    it as read; None when ``limit`` requests were counted in the window already."""
    count = max(0, field_count(doc.data, "count")) if doc is not None and doc.data.get("window") == window else 0
    if count >= limit:
        return None
    data = {"window": window, "count": count + 1, "updatedAt": time.time()}
    return Write("create", path, data) if doc is None else Write("set", path, data, if_token=doc.token)


def commit_guarded(guards: Sequence[Guard], commit: Callable[[list[Write]], T], *, what: str) -> T:
    """``commit(writes)`` with the writes of ``guards`` (each may refuse: nothing is written). A
    ``PreconditionFailed`` means a guarded document changed meanwhile (every other write of the
    commit must only fail on a race that a new attempt resolves): each is read again and the commit
    tried again, at most ``RESERVE_ATTEMPTS`` times (then TransactionContention)."""
    for attempt in range(RESERVE_ATTEMPTS):
        writes = [g.write(attempt > 0) for g in guards]
        try:
            return commit(writes)
        except PreconditionFailed:
            continue  # another start (or request) of this user wrote first: read again
    raise TransactionContention(f"{what} kept changing")


class LimitsRepo:
    def __init__(self, store: DocStore) -> None:
        self.store = store

    # ---- requests per minute -----------------------------------------------------------------
    @staticmethod
    def counter_path(uid: str) -> str:
        return paths.limit(uid, "requests")

    def count_request(self, uid: str, window: int, limit: int) -> RequestCount:
        """Admit one request of ``uid`` in ``window`` (a window's number, e.g. epoch minutes) unless
        ``limit`` requests were admitted in it already. A refused request writes nothing.
        Raises TransactionContention when concurrent requests of the user kept winning the race."""
        path = paths.limit(uid, "requests")
        for _ in range(REQUEST_ATTEMPTS):
            doc = self.store.get(path)
            write = request_write(path, doc, window, limit)
            if write is None:
                return RequestCount(admitted=False, count=field_count(doc.data if doc is not None else None, "count"))
            try:
                self.store.commit([write])
            except PreconditionFailed:
                continue  # another request of this user counted first: read again
            return RequestCount(admitted=True, count=int(write.data["count"]))
        raise TransactionContention(f"the request counter of {uid} kept changing")

    # ---- active runs and sessions ------------------------------------------------------------
    def start_paths(self, uid: str, kind: UnitKind, *, day: str | None, active: bool) -> list[str]:
        """What the checks of a start read: the user's document (their own limits) and the usage
        counter of ``day`` (the daily-token limit on) and the slot document of ``kind`` (``active``)."""
        out = [paths.user(uid)] if day is not None or active else []
        if day is not None:
            out.append(paths.usage_day(uid, day))
        if active:
            out.append(paths.limit(uid, kind))
        return out

    def user_limit(self, uid: str, name: str, *, batch: BatchedReads | None = None) -> int | None:
        """The user's own value of a limit (``users/{uid}.limits.<name>``, set by the admin API), or
        ``None`` for the deployment's (one document read; a value that is not a whole number >= 0 is
        ignored)."""
        doc = read(self.store, paths.user(uid), batch)
        limits = doc.data.get("limits") if doc is not None else None
        value = limits.get(name) if isinstance(limits, dict) else None
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None

    def active_units(self, uid: str, kind: UnitKind, *, batch: BatchedReads | None = None,
                     limit: int | None = None) -> ActiveUnits:
        """The user's slot document and the state of each unit it lists (no transaction): one read,
        plus one of the listed units when there are at least ``limit`` of them (None: always)."""
        doc = read(self.store, paths.limit(uid, kind), batch)
        ids = [str(i) for i in doc.data.get("ids", [])] if doc is not None else []
        if limit is not None and len(ids) < limit:
            return ActiveUnits(kind=kind, listed=tuple(ids), ended=frozenset(), waiting=frozenset(), doc=doc,
                               checked=frozenset())
        return unit_states(self.store, uid, kind, ids, doc)


def unit_states(store: DocStore, uid: str, kind: UnitKind, ids: Collection[str], doc: Doc | None) -> ActiveUnits:
    """Which of the units ``ids`` (listed by the slot document ``doc``) have ended or wait for the
    user (one read of them all)."""
    terminal = _terminal(kind)
    ids = list(ids)
    reserved = _reserved(doc)
    units = store.get_many([_unit_path(kind, i) for i in ids]) if ids else []
    at = time.time()
    # A unit not created yet may still be in its creating transaction: active while its
    # reservation is recent (ids listed before reservations were recorded count as ended).
    ended = {i for i, u in zip(ids, units, strict=True)
             if (u is None and at - reserved.get(i, 0.0) > RESERVATION_TTL_S)
             or (u is not None and (u.data.get("uid") != uid or u.data.get("status") in terminal))}
    waiting = {i for i, u in zip(ids, units, strict=True)
               if u is not None and i not in ended and u.data.get("status") == _WAITING[kind]}
    return ActiveUnits(kind=kind, listed=tuple(ids), ended=frozenset(ended), waiting=frozenset(waiting), doc=doc)
