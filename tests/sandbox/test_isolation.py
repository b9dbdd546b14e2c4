"""A script in a workspace is isolated: each test fails on a plain subprocess (the ``plain``
control runs the same script without the jail and shows the host's answer)."""

from __future__ import annotations

import secrets
import socket
import subprocess
import threading
from pathlib import Path

import pytest

from shared.connectors.sandbox import SandboxClient, SandboxError
from tests.sandbox.conftest import SMALL_LIMITS
from tests.sandbox.support import SandboxProcess


def _ws(box: SandboxClient) -> str:
    wid = "ws_" + secrets.token_hex(8)
    box.create(wid)
    return wid


def plain(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["/bin/sh", "-c", script], cwd=cwd, capture_output=True, text=True, timeout=30)


class Listener:
    """A TCP port on loopback that records whether anything connected."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(5)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connected = 0
        self._stop = False
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connected += 1
            conn.close()

    def close(self) -> None:
        self._stop = True
        self._thread.join()
        self.sock.close()


CONNECT = ("python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), timeout=3); "
           "print(\"connected\")'")


def test_a_script_cannot_connect_to_a_loopback_port_of_the_host(sandbox: SandboxProcess, tmp_path: Path) -> None:
    box = sandbox.client()
    wid = _ws(box)
    listener = Listener()
    try:
        result = box.exec(wid, CONNECT.format(port=listener.port), timeout_s=20)
        assert result.exit_code != 0
        assert "connected" not in result.stdout
        assert "Network is unreachable" in result.stderr or "Connection refused" in result.stderr
        # nor the sandbox service itself
        service_port = sandbox.url.rsplit(":", 1)[1]
        assert box.exec(wid, CONNECT.format(port=service_port), timeout_s=20).exit_code != 0
        assert listener.connected == 0
        assert plain(CONNECT.format(port=listener.port), tmp_path).stdout.strip() == "connected"  # control
    finally:
        listener.close()


def test_a_script_cannot_read_host_files_or_the_services_environment(sandbox: SandboxProcess, tmp_path: Path) -> None:
    box = sandbox.client()
    wid = _ws(box)
    store = tmp_path / "agent.sqlite3"
    store.write_text("CREDENTIALS_ENCRYPTION_KEY=topsecret")
    script = (f"cat {store} 2>&1; ls {tmp_path} 2>&1; "
              "cat /proc/1/environ /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c SANDBOX_TEST_MARKER; "
              "ls /var/lib /home /root 2>&1 | head -5; env")
    result = box.exec(wid, script, timeout_s=20)
    assert "topsecret" not in result.stdout
    assert "No such file or directory" in result.stdout
    assert SMALL_LIMITS["SANDBOX_TEST_MARKER"] not in result.stdout
    assert "SANDBOX_KEY" not in result.stdout and sandbox.key not in result.stdout
    assert sorted(line.split("=", 1)[0] for line in result.stdout.splitlines() if "=" in line and
                  line.split("=", 1)[0].isupper()) == ["GIT_CONFIG_NOSYSTEM", "HOME", "LANG", "PATH", "PWD",
                                                       "TERM", "TMPDIR"]
    control = plain(f"cat {store}; cat /proc/{sandbox.process.pid}/environ | tr '\\0' '\\n'", tmp_path)
    assert "topsecret" in control.stdout and "SANDBOX_TEST_MARKER" in control.stdout


def test_the_system_is_read_only_and_the_workspace_the_only_writable_path(sandbox: SandboxProcess) -> None:
    box = sandbox.client()
    wid = _ws(box)
    result = box.exec(wid, "touch /usr/x 2>&1; touch /etc/x 2>&1; touch /x 2>&1; echo ok > here.txt && cat here.txt; "
                      "id -u; pwd", timeout_s=20)
    assert result.stdout.count("Read-only file system") + result.stdout.count("Permission denied") == 3
    lines = result.stdout.strip().splitlines()
    assert lines[-3:-2] == ["ok"] and lines[-1] == "/workspace"
    assert lines[-2] != "0"  # not root inside either
    assert box.read_file(wid, "here.txt").content == "ok\n"


def test_a_script_cannot_see_another_workspace(sandbox: SandboxProcess) -> None:
    box = sandbox.client()
    first, second = _ws(box), _ws(box)
    box.exec(first, "echo mine > private-7f3a.txt", timeout_s=20)
    result = box.exec(second, "ls -a /workspace; find / -name 'private-7f3a.txt' 2>/dev/null; "
                      "ls /proc | grep -c '[0-9]'", timeout_s=20)
    assert "private-7f3a" not in result.stdout
    assert int(result.stdout.strip().splitlines()[-1]) <= 4  # only its own processes
    with pytest.raises(SandboxError) as err:
        box.read_file(second, "private-7f3a.txt")
    assert err.value.code == "FILE_NOT_FOUND"


def test_memory_and_processes_are_limited(sandbox: SandboxProcess, tmp_path: Path) -> None:
    box = sandbox.client()
    wid = _ws(box)
    memory = "python3 -c 'x = bytearray(600 << 20); print(\"allocated\")'"
    result = box.exec(wid, memory, timeout_s=20)
    assert result.exit_code != 0 and "allocated" not in result.stdout and "MemoryError" in result.stderr
    assert plain(memory, tmp_path).stdout.strip() == "allocated"  # control: the host has the memory
    result = box.exec(wid, FORKS, timeout_s=20)
    started = int(result.stdout.strip())
    assert started < int(SMALL_LIMITS["SANDBOX_PROCESSES"]) and "Resource temporarily unavailable" in result.stderr
    assert int(plain(FORKS, tmp_path).stdout.strip()) == 60  # control


FORKS = """python3 -c '
import os, sys, time
n = 0
for i in range(60):
    try:
        pid = os.fork()
    except OSError as exc:
        print(exc, file=sys.stderr)
        break
    if pid == 0:
        time.sleep(2)
        os._exit(0)
    n += 1
print(n)'"""


def test_a_script_cannot_write_past_the_disk_quota(sandbox: SandboxProcess) -> None:
    box = sandbox.client()
    wid = _ws(box)
    quota = int(SMALL_LIMITS["SANDBOX_DISK_BYTES"])
    result = box.exec(wid, "head -c 20000000 /dev/zero > big; echo rc=$?; "
                      "for i in 1 2 3; do head -c 4000000 /dev/zero > more$i; done; cat big more* | wc -c",
                      timeout_s=20)
    assert "rc=1" in result.stdout and "No space left on device" in result.stderr
    assert int(result.stdout.strip().splitlines()[-1]) <= quota
    assert box.info(wid)["diskBytes"] <= quota
    # the scratch /tmp is capped too, and gone after the script
    result = box.exec(wid, "head -c 100000000 /dev/zero > /tmp/big; echo rc=$?", timeout_s=20)
    assert "rc=1" in result.stdout
    assert box.exec(wid, "ls /tmp | wc -l", timeout_s=20).stdout.strip() == "0"


def test_output_over_the_cap_is_truncated(sandbox: SandboxProcess) -> None:
    box = sandbox.client()
    wid = _ws(box)
    cap = int(SMALL_LIMITS["SANDBOX_OUTPUT_BYTES"])
    result = box.exec(wid, "head -c 300000 /dev/zero | tr '\\0' a; head -c 10 /dev/zero | tr '\\0' b >&2", timeout_s=20)
    assert result.exit_code == 0
    assert len(result.stdout) == cap and set(result.stdout) == {"a"}
    assert result.stderr == "b" * 10
    assert result.truncated is True
    small = box.exec(wid, "echo hi", timeout_s=20)
    assert small.stdout == "hi\n" and small.truncated is False


def test_the_wall_time_stops_a_script_and_its_children(sandbox: SandboxProcess) -> None:
    box = sandbox.client()
    wid = _ws(box)
    result = box.exec(wid, "(sleep 30; echo late > late.txt) & sleep 30", timeout_s=1)
    assert result.timed_out is True and result.exit_code == 137
    assert result.duration_ms < 20_000
    listing = box.exec(wid, "sleep 2; ls", timeout_s=20)
    assert "late.txt" not in listing.stdout


@pytest.mark.parametrize("path", ["../etc/passwd", "/etc/passwd", "a/../../x", "escape/passwd", "up"])
def test_paths_outside_the_workspace_are_refused(sandbox: SandboxProcess, path: str) -> None:
    box = sandbox.client()
    wid = _ws(box)
    box.exec(wid, "ln -s /etc escape; ln -s .. up", timeout_s=20)
    with pytest.raises(SandboxError) as err:
        box.read_file(wid, path)
    assert err.value.code == "PATH_REFUSED" and err.value.status == 400


def test_requests_without_the_key_are_refused(sandbox: SandboxProcess) -> None:
    box = SandboxClient(sandbox.url, key="wrong")
    with pytest.raises(SandboxError) as err:
        box.create("ws_" + secrets.token_hex(8))
    assert err.value.status == 401 and err.value.code == "UNAUTHENTICATED"
