"""Inbound event routing: envelopes that are not replies to a request wait here for the loop.

The relay client publishes ``state.updated``, ``user.message`` and anything unsolicited; the
control loop takes them in arrival order (``drain``), and the verifier picks only the
``state.updated`` it waits for (``next`` with a predicate), leaving the rest queued. A terminal
failure (protocol violation, lost connection) is raised by every wait from then on, so nothing
waits for a peer that is gone.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable

from hostagent.errors import HostAgentError
from hostagent.protocol import Envelope

Predicate = Callable[[Envelope], bool]


class EventBus:
    def __init__(self) -> None:
        self._queue: deque[Envelope] = deque()
        self._changed = asyncio.Condition()
        self.failure: HostAgentError | None = None
        self.refused = 0
        """How many frames were refused so far (a wait may stop early on a new one)."""

    async def refuse(self) -> None:
        """Count a refused frame and wake every wait that stops on one."""
        async with self._changed:
            self.refused += 1
            self._changed.notify_all()

    async def publish(self, env: Envelope) -> None:
        async with self._changed:
            self._queue.append(env)
            self._changed.notify_all()

    async def fail(self, failure: HostAgentError) -> None:
        async with self._changed:
            if self.failure is None:
                self.failure = failure
            self._changed.notify_all()

    def _take(self, predicate: Predicate | None) -> Envelope | None:
        for env in self._queue:
            if predicate is None or predicate(env):
                self._queue.remove(env)
                return env
        return None

    async def next(self, predicate: Predicate | None = None, *, timeout: float,
                   refused_before: int | None = None) -> Envelope | None:
        """The first queued event matching ``predicate`` (waiting up to ``timeout`` s); None on
        timeout, or as soon as more than ``refused_before`` frames were refused (when given)."""
        async with self._changed:
            try:
                async with asyncio.timeout(timeout):
                    while True:
                        if self.failure is not None:
                            raise self.failure
                        found = self._take(predicate)
                        if found is not None:
                            return found
                        if refused_before is not None and self.refused > refused_before:
                            return None
                        await self._changed.wait()
            except TimeoutError:
                return None

    def drain(self) -> list[Envelope]:
        """Every queued event, oldest first (raises a terminal failure first)."""
        if self.failure is not None:
            raise self.failure
        items = list(self._queue)
        self._queue.clear()
        return items

    def pending(self) -> int:
        return len(self._queue)
