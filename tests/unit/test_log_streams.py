"""shared.logs.iterate_in_context: a streamed body keeps the log context it was created in."""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Iterator
from typing import Any

from shared.logs import current_log_context, iterate_in_context, log_context


def test_steps_run_in_the_context_of_creation_even_after_the_block_exited() -> None:
    seen: list[dict[str, Any]] = []

    def body() -> Iterator[int]:
        seen.append(dict(current_log_context()))
        yield 1
        with log_context(step="two"):  # a block spanning a yield unwinds in the same context
            seen.append(dict(current_log_context()))
            yield 2
        seen.append(dict(current_log_context()))

    with log_context(traceId="t1"):
        stream = iterate_in_context(body(), runId="r1", threadId=None)
    assert current_log_context() == {}
    assert list(stream) == [1, 2]
    assert seen == [{"traceId": "t1", "runId": "r1"}, {"traceId": "t1", "runId": "r1", "step": "two"},
                    {"traceId": "t1", "runId": "r1"}]
    assert current_log_context() == {}  # nothing leaked into the iterating thread


def test_threads_started_by_the_body_inherit_the_fields() -> None:
    seen: list[dict[str, Any]] = []

    def body() -> Iterator[str]:
        worker = threading.Thread(target=contextvars.copy_context().run,
                                  args=(lambda: seen.append(dict(current_log_context())),))
        worker.start()
        worker.join()
        yield "done"

    with log_context(traceId="t2"):
        stream = iterate_in_context(body(), uid="alice")
    assert list(stream) == ["done"]
    assert seen == [{"traceId": "t2", "uid": "alice"}]


def test_close_unwinds_the_body_in_its_context() -> None:
    seen: list[dict[str, Any]] = []

    def body() -> Iterator[int]:
        with log_context(inner=True):
            try:
                yield 1
                yield 2
            finally:
                seen.append(dict(current_log_context()))

    with log_context(traceId="t3"):
        stream = iterate_in_context(body())
    assert next(stream) == 1
    stream.close()  # e.g. the client went away; must not raise "token created in a different Context"
    assert seen == [{"traceId": "t3", "inner": True}]
    assert current_log_context() == {}
