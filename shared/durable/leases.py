"""Leases: which invocation may move a unit of work, until when.

An invocation holds the lease of the unit it works on and renews it at every commit; another
invocation may take the unit over only once the lease expired (the holder died). A unit that
yielded (its invocation's budget was spent) holds a *parked* lease: free for the handler of its
``continue`` message at once, and for the sweep's recovery once it expires (the message was lost).
"""

from __future__ import annotations

from shared.state.records import Lease, now

PARKED = "parked"
"""Owner of the lease of a unit that yielded and waits for its ``continue`` message."""


def held(owner: str, ttl_s: float) -> Lease:
    return Lease(owner=owner, expires_at=now() + ttl_s)


def parked(ttl_s: float) -> Lease:
    return Lease(owner=PARKED, expires_at=now() + ttl_s)


def claimable(lease: Lease | None) -> bool:
    """Whether a new invocation may claim a unit with ``lease``: no lease, an expired one, or a
    parked one (the claim is a conditional commit: of several claimants exactly one wins)."""
    return lease is None or lease.expires_at <= now() or lease.owner == PARKED
