"""Run only by ``test_network_guard.test_a_swallowed_attempt_still_fails_the_test`` in a child
pytest (the file name keeps normal runs from collecting it): code that hides the guard's refusal."""

from __future__ import annotations

import contextlib
import socket


def test_swallowed_attempt() -> None:
    with contextlib.suppress(OSError):
        socket.create_connection(("198.51.100.20", 80), timeout=5)
