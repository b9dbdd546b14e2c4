"""A workspace runs command after command: bubblewrap's orphans are collected, none add up.

Each script leaves one orphan (bubblewrap's pid 1 of the jail, see sandbox/reaper.py). Before the
service adopted and reaped them, they stayed zombies counted against the workspace uid's
RLIMIT_NPROC, and after about ``SANDBOX_PROCESSES`` commands every exec failed with
``bwrap: Can't fork for pid 1: Resource temporarily unavailable``.
"""

from __future__ import annotations

import secrets
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.sandbox.support import ROOT, SandboxProcess, zombie_children

PROCESSES = 8


@pytest.fixture(scope="module")
def small_box(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxProcess]:
    base: Path = tmp_path_factory.mktemp("sandbox-many")
    box = SandboxProcess.start(base, env={"SANDBOX_PROCESSES": str(PROCESSES), "SANDBOX_WALL_S": "30"},
                               snapshot_dir=base / "snapshots")
    yield box
    box.stop()


def test_many_more_commands_than_the_process_limit_run_in_one_workspace(small_box: SandboxProcess) -> None:
    client = small_box.client()
    wid = "ws_" + secrets.token_hex(10)
    client.create(wid)
    codes = [client.exec(wid, "true", timeout_s=10).exit_code for _ in range(PROCESSES * 10)]
    failed = [i for i, code in enumerate(codes) if code != 0]
    assert not failed, f"commands {failed[:5]}... failed; the service log:\n{small_box.log.read_text()[-2000:]}"
    # What one script may still leave (the last jail's pid 1, collected after the next script).
    assert len(zombie_children(small_box.process.pid)) <= 1


def test_a_script_can_still_start_processes_up_to_its_limit_after_many_commands(small_box: SandboxProcess) -> None:
    client = small_box.client()
    wid = "ws_" + secrets.token_hex(10)
    client.create(wid)
    for _ in range(PROCESSES * 3):
        assert client.exec(wid, "true", timeout_s=10).exit_code == 0
    # bwrap, its pid 1 of the jail, the shell and three children: 6 of 8, with room for the last
    # script's orphan if it is still being collected.
    done = client.exec(wid, "sleep 1 & sleep 1 & sleep 1 & wait; echo ok", timeout_s=20)
    assert (done.exit_code, done.stdout.strip()) == (0, "ok"), done


def test_reap_collects_orphans_and_leaves_the_children_someone_waits_for() -> None:
    # In a process of its own: a subreaper adopts every orphan below it, which pytest must not.
    script = textwrap.dedent("""
        import subprocess, time
        from sandbox import reaper
        reaper.adopt_orphans()
        waited = reaper.popen(["sh", "-c", "exit 7"])
        # A shell that leaves an orphan behind: the orphan comes to this process.
        subprocess.run(["sh", "-c", "sh -c 'exit 0' & exit 0"], check=True)
        time.sleep(0.5)
        before = reaper.reap()  # stops at `waited`, whose caller has not waited yet
        code = waited.wait()
        reaper.release(waited)
        print(before + reaper.reap(), code)
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    reaped, code = done.stdout.split()
    assert int(reaped) >= 1  # the orphaned shell
    assert int(code) == 7  # the registered child's status was left to its caller
