"""A workspace outlives the sandbox process that held it: after the process is killed, a new one
on an empty local disk restores it from its snapshot (Cloud Storage through gcp-storage-emulator
and the official client; a local directory as ``make dev`` uses)."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from shared.connectors.sandbox import SandboxError
from tests.sandbox.support import SandboxProcess, StorageEmulator


@pytest.fixture(scope="module")
def storage(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StorageEmulator]:
    emu = StorageEmulator.start(tmp_path_factory.mktemp("gcs"))
    yield emu
    emu.stop()


@pytest.mark.parametrize("backend", ["cloud-storage", "local-dir"])
def test_a_workspace_is_restored_by_a_new_process_on_an_empty_disk(
        backend: str, storage: StorageEmulator, tmp_path: Path) -> None:
    where: dict[str, object] = ({"env": storage.env()} if backend == "cloud-storage"
                                else {"snapshot_dir": tmp_path / "snapshots"})
    first = SandboxProcess.start(tmp_path, **where)  # type: ignore[arg-type]
    wid = "ws_" + secrets.token_hex(8)
    try:
        box = first.client()
        box.create(wid)
        done = box.exec(wid, "mkdir -p src && printf 'kept across processes\\n' > src/notes.txt && "
                        "ln -s src/notes.txt link", timeout_s=20)
        assert done.exit_code == 0 and done.changed is True
        assert box.exec(wid, "cat src/notes.txt", timeout_s=20).changed is False
    finally:
        first.stop()
    assert not Path(first.root).exists()  # its local disk is gone; the next process starts on a new, empty one

    second = SandboxProcess.start(tmp_path, **where)  # type: ignore[arg-type]
    try:
        box = second.client()
        assert box.read_file(wid, "src/notes.txt").content == "kept across processes\n"
        assert box.exec(wid, "cat link; echo more >> src/notes.txt", timeout_s=20).stdout == "kept across processes\n"
        assert box.destroy(wid) is True
        with pytest.raises(SandboxError) as err:
            box.read_file(wid, "src/notes.txt")
        assert err.value.code == "WORKSPACE_NOT_FOUND"
    finally:
        second.stop()
