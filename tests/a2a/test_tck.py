"""The official A2A TCK (``../shared/a2a-tck``, pinned, unchanged) against our server as ``make dev``
runs it, over JSON-RPC and HTTP+JSON, mandatory (MUST) tests: one process on SQLite, and two
processes on one Firestore emulator with every request going to the other process than the last
(the round-robin proxy). The scripted agent behind the fake Gemini answers the TCK's message ids.

Expected failures, each for a stated reason (docs/a2a.md, "Conformance"):
- CORE-SEND-003 (both transports): the TCK's parametrized runner expects SendMessage with a part
  of media type ``application/x-unsupported-tck-type`` to succeed, while the requirement itself
  (and spec 1.0 section 3.1.1) says it MUST fail with ContentTypeNotSupportedError, which we answer.
- the file, file-URL and message-only scenarios (DM-ART-001 file/url, DM-MSG-001): our agent answers
  with text (or a JSON object as a data part) in a task; it produces no files and no task-less
  message replies, so these SUT behaviours cannot come from its model.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.a2a.servers import a2a_servers
from tests.a2a.tck import run_tck
from tests.emulators import Emulator

MIN_PASSED = 80
EXPECTED_FAILURES = {
    "test_must_requirement[CORE-SEND-003-jsonrpc]",
    "test_must_requirement[CORE-SEND-003-http_json]",
    "TestFileArtifact::test_task_has_file_artifact[jsonrpc]",
    "TestFileArtifact::test_task_has_file_artifact[http_json]",
    "TestFileUrlArtifact::test_task_has_file_url_artifact[jsonrpc]",
    "TestFileUrlArtifact::test_task_has_file_url_artifact[http_json]",
    "TestMessageResponse::test_returns_message_with_text_part[jsonrpc]",
    "TestMessageResponse::test_returns_message_with_text_part[http_json]",
}


def _check(result_failures: list[str], passed: int, output: str) -> None:
    unexpected = [f for f in result_failures if not any(f.split(": ", 1)[0].endswith(e) for e in EXPECTED_FAILURES)]
    assert not unexpected, "TCK failures:\n" + "\n".join(unexpected) + "\n" + output[-4000:]
    assert passed >= MIN_PASSED, output[-4000:]


def test_tck_mandatory_one_process(tmp_path: Path) -> None:
    with a2a_servers(tmp_path, processes=1) as servers:
        result = run_tck(servers.proxy.url, tmp_path)
    _check(result.failures, result.passed, result.output)


@pytest.mark.firestore
def test_tck_mandatory_two_processes_on_firestore(tmp_path: Path, firestore_emulator: Emulator) -> None:
    with a2a_servers(tmp_path, processes=2, firestore_host=firestore_emulator.host,
                     project="demo-a2a-tck") as servers:
        result = run_tck(servers.proxy.url, tmp_path)
        served = list(servers.proxy.served)
    assert min(served) > 50, served  # both processes served a share of the requests
    _check(result.failures, result.passed, result.output)
