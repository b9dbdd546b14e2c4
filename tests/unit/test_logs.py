"""shared.logs: JSON lines for Cloud Logging, trace parsing, per-request context."""

from __future__ import annotations

import contextvars
import datetime
import io
import json
import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from shared.logs import (
    CloudLoggingFormatter,
    configure_logging,
    current_log_context,
    log_context,
    trace_fields,
    trace_from_header,
)

PROJECT = "demo-logs"
TRACE = "105445aa7843bc8bf206b12000100000"


class Captured:
    def __init__(self) -> None:
        self.stream = io.StringIO()

    def lines(self) -> list[str]:
        return self.stream.getvalue().splitlines()

    def entries(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.lines()]


@pytest.fixture
def captured() -> Iterator[tuple[logging.Logger, Captured]]:
    """A private logger writing through the real formatter into a buffer."""
    out = Captured()
    logger = logging.getLogger(f"tests.logs.{id(out)}")
    handler = logging.StreamHandler(out.stream)
    handler.setFormatter(CloudLoggingFormatter(PROJECT))
    logger.addHandler(handler)
    logger.setLevel(1)
    logger.propagate = False
    yield logger, out
    logger.removeHandler(handler)


@pytest.fixture
def root_restored() -> Iterator[logging.Logger]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield root
    root.handlers[:] = handlers
    root.setLevel(level)


def test_each_record_is_one_json_line_with_cloud_logging_fields(captured: tuple[logging.Logger, Captured]) -> None:
    logger, out = captured
    logger.info("two\nlines and a quote \" and ünïcode")
    [line] = out.lines()
    entry = json.loads(line)
    assert entry["message"] == "two\nlines and a quote \" and ünïcode"
    assert entry["severity"] == "INFO"
    assert entry["logger"] == logger.name
    when = datetime.datetime.fromisoformat(entry["time"])
    assert entry["time"].endswith("Z") and when.tzinfo is not None
    assert abs((datetime.datetime.now(datetime.UTC) - when).days) == 0
    location = entry["logging.googleapis.com/sourceLocation"]
    assert location["function"] == "test_each_record_is_one_json_line_with_cloud_logging_fields"
    assert location["file"].endswith("test_logs.py")


def test_severity_names(captured: tuple[logging.Logger, Captured]) -> None:
    logger, out = captured
    logger.debug("d")
    logger.info("i")
    logger.log(25, "between info and warning")
    logger.warning("w")
    logger.error("e")
    logger.critical("c")
    logger.log(5, "below debug")
    assert [e["severity"] for e in out.entries()] == [
        "DEBUG", "INFO", "INFO", "WARNING", "ERROR", "CRITICAL", "DEFAULT"]


def test_message_arguments_are_interpolated(captured: tuple[logging.Logger, Captured]) -> None:
    logger, out = captured
    logger.info("run %s took %d steps", "r1", 3)
    assert out.entries()[0]["message"] == "run r1 took 3 steps"


@pytest.mark.parametrize(("header", "expected"), [
    (f"{TRACE}/1;o=1", (TRACE, "0000000000000001")),
    (f"{TRACE}/12345678901234567890;o=0", (TRACE, "ab54a98ceb1f0ad2")),
    (f"{TRACE.upper()}/255", (TRACE, "00000000000000ff")),
    (TRACE, (TRACE, None)),
    (f"{TRACE};o=1", (TRACE, None)),
    (f"{TRACE}/notdecimal;o=1", (TRACE, None)),
    (f"{TRACE}/0;o=1", (TRACE, None)),
    (f"{TRACE}/18446744073709551616", (TRACE, None)),  # 2**64 does not fit a span id
    ("0" * 32 + "/1;o=1", (None, None)),
    ("abc/1;o=1", (None, None)),
    (f"{TRACE}0/1", (None, None)),
    ("z" * 32 + "/1", (None, None)),
    ("", (None, None)),
    (None, (None, None)),
])
def test_trace_from_header(header: str | None, expected: tuple[str | None, str | None]) -> None:
    assert trace_from_header(header) == expected


def test_trace_fields_from_cloud_header_or_traceparent() -> None:
    assert trace_fields({"x-cloud-trace-context": f"{TRACE}/1;o=1"}) == {
        "traceId": TRACE, "spanId": "0000000000000001", "traceSampled": True}
    assert trace_fields({"traceparent": f"00-{TRACE}-00f067aa0ba902b7-00"}) == {
        "traceId": TRACE, "spanId": "00f067aa0ba902b7", "traceSampled": False}
    assert trace_fields({"traceparent": "00-" + "0" * 32 + "-00f067aa0ba902b7-01"}) == {}
    assert trace_fields({"X-Cloud-Trace-Context": "garbage"}) == {}
    assert trace_fields({}) == {}


def test_trace_fields_become_cloud_logging_trace_keys(captured: tuple[logging.Logger, Captured]) -> None:
    logger, out = captured
    with log_context(**trace_fields({"X-Cloud-Trace-Context": f"{TRACE}/1;o=1"})):
        logger.info("traced")
    logger.info("untraced")
    traced, untraced = out.entries()
    assert traced["logging.googleapis.com/trace"] == f"projects/{PROJECT}/traces/{TRACE}"
    assert traced["logging.googleapis.com/spanId"] == "0000000000000001"
    assert traced["logging.googleapis.com/trace_sampled"] is True
    assert "traceId" not in traced and "spanId" not in traced
    assert not any(key.startswith("logging.googleapis.com/trace") for key in untraced)


def test_context_fields_nest_and_unwind(captured: tuple[logging.Logger, Captured]) -> None:
    logger, out = captured
    with log_context(uid="alice", threadId="t1"):
        with log_context(runId="r1", threadId=None):
            logger.info("inner")
            assert current_log_context() == {"uid": "alice", "threadId": "t1", "runId": "r1"}
        logger.info("outer")
    logger.info("none")
    inner, outer, none = out.entries()
    assert (inner["uid"], inner["threadId"], inner["runId"]) == ("alice", "t1", "r1")
    assert (outer["uid"], outer["threadId"]) == ("alice", "t1") and "runId" not in outer
    assert not {"uid", "threadId", "runId"} & none.keys()


def test_extra_fields_are_merged_but_cannot_replace_the_entry_keys(
        captured: tuple[logging.Logger, Captured]) -> None:
    logger, out = captured
    with log_context(runId="r1", step=1):
        logger.info("tool done", extra={"fields": {"step": 2, "tool": "memory.save", "severity": "DEBUG",
                                                   "message": "spoofed", "when": datetime.date(2025, 1, 2)}})
    entry = out.entries()[0]
    assert (entry["runId"], entry["step"], entry["tool"]) == ("r1", 2, "memory.save")
    assert (entry["severity"], entry["message"]) == ("INFO", "tool done")
    assert entry["when"] == "2025-01-02"


def test_unserialisable_keys_still_give_one_json_line(captured: tuple[logging.Logger, Captured]) -> None:
    logger, out = captured
    logger.warning("odd", extra={"fields": {("a", "b"): 1}})
    entry = out.entries()[0]
    assert (entry["severity"], entry["message"]) == ("WARNING", "odd")
    assert "('a', 'b')" in entry["fieldsError"]


def test_context_is_isolated_between_threads(captured: tuple[logging.Logger, Captured]) -> None:
    logger, out = captured
    workers = 4
    barrier = threading.Barrier(workers)
    errors: list[BaseException] = []

    def serve(i: int) -> None:
        try:
            with log_context(runId=f"run-{i}", uid=f"user-{i}"):
                barrier.wait(timeout=30)  # every thread is inside its own context now
                logger.info("request %d", i)
                barrier.wait(timeout=30)
                logger.info("request %d again", i)
        except BaseException as exc:
            errors.append(exc)

    with log_context(runId="outer"):
        threads = [threading.Thread(target=serve, args=(i,)) for i in range(workers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert not errors
    entries = out.entries()
    assert len(entries) == 2 * workers
    for entry in entries:
        i = entry["message"].split()[1]
        assert (entry["runId"], entry["uid"]) == (f"run-{i}", f"user-{i}")


def test_a_new_thread_starts_without_context_unless_copied(captured: tuple[logging.Logger, Captured]) -> None:
    logger, out = captured
    with log_context(runId="r1"):
        plain = threading.Thread(target=logger.info, args=("plain",))
        copied = threading.Thread(target=contextvars.copy_context().run, args=(logger.info, "copied"))
        plain.start()
        plain.join()
        copied.start()
        copied.join()
    by_message = {e["message"]: e for e in out.entries()}
    assert "runId" not in by_message["plain"]
    assert by_message["copied"]["runId"] == "r1"


def test_exception_is_rendered_with_its_stack_trace(captured: tuple[logging.Logger, Captured]) -> None:
    logger, out = captured

    def fail() -> None:
        raise ValueError("bad value\nsecond line")

    try:
        fail()
    except ValueError:
        logger.exception("tool failed")
    [line] = out.lines()
    entry = json.loads(line)
    assert entry["severity"] == "ERROR"
    assert entry["message"] == "tool failed"
    assert entry["exception"] == "ValueError: bad value\nsecond line"
    assert entry["stack_trace"].startswith("Traceback (most recent call last):")
    assert "in fail" in entry["stack_trace"]
    assert entry["stack_trace"].rstrip().endswith("second line")


def test_exception_outside_an_except_block_has_no_stack_trace(captured: tuple[logging.Logger, Captured]) -> None:
    logger, out = captured
    logger.exception("no active exception")
    entry = out.entries()[0]
    assert "stack_trace" not in entry and entry["severity"] == "ERROR"


def test_configure_logging_is_idempotent(root_restored: logging.Logger) -> None:
    first, second = io.StringIO(), io.StringIO()
    configure_logging(PROJECT, stream=first)
    configure_logging("other-project", level="DEBUG", stream=second)
    ours = [h for h in root_restored.handlers if isinstance(h.formatter, CloudLoggingFormatter)]
    assert len(ours) == 1
    assert root_restored.level == logging.DEBUG
    with log_context(traceId=TRACE):
        logging.getLogger("tests.logs.root").debug("via root")
    assert first.getvalue() == ""
    entry = json.loads(second.getvalue())
    assert entry["message"] == "via root" and entry["severity"] == "DEBUG"
    assert entry["logging.googleapis.com/trace"] == f"projects/other-project/traces/{TRACE}"
