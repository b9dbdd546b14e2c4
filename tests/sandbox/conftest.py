"""One sandbox service process per module, with small limits so the isolation tests are quick."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.sandbox.support import SandboxProcess

SMALL_LIMITS = {
    "SANDBOX_DISK_BYTES": str(8 << 20),
    "SANDBOX_MEMORY_BYTES": str(256 << 20),
    "SANDBOX_PROCESSES": "32",
    "SANDBOX_OUTPUT_BYTES": str(64 * 1024),
    "SANDBOX_WALL_S": "30",
    "SANDBOX_TEST_MARKER": "host-secret-4b1d",  # in the service's environment; no script may see it
}


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxProcess]:
    base: Path = tmp_path_factory.mktemp("sandbox")
    box = SandboxProcess.start(base, env=SMALL_LIMITS, snapshot_dir=base / "snapshots")
    yield box
    box.stop()


