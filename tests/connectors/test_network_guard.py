"""The no-internet guarantee of the test suite (``network_guard`` in tests/conftest.py): a
non-loopback connect fails at once with a clear error, and fails the test even when swallowed.

The addresses used are reserved for documentation (RFC 5737, RFC 3849): nothing would answer,
and the guard refuses them before any packet leaves.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
import types
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
REFUSED = "tests must not reach the network"


@pytest.fixture
def listener() -> Iterator[int]:
    """A loopback TCP server accepting connections; yields its port."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(5)
    port = server.getsockname()[1]

    def accept() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield port
    server.close()
    thread.join(5)


def refused(guard: Any, action: Any) -> OSError:
    started = time.monotonic()
    with pytest.raises(OSError, match=REFUSED) as info:
        action()
    assert time.monotonic() - started < 1.0  # refused locally, not after a network timeout
    assert type(info.value).__name__ == "NetworkAccessBlocked" and isinstance(info.value, ConnectionRefusedError)
    assert guard.blocked, "the attempt must be recorded"
    guard.blocked.clear()  # acknowledged: this test made it on purpose
    return info.value


@pytest.mark.parametrize(("family", "address"), [
    (socket.AF_INET, ("203.0.113.7", 80)),
    (socket.AF_INET, ("169.254.169.254", 80)),  # a cloud metadata server would hand out credentials
    (socket.AF_INET, ("0.0.0.0", 80)),
    (socket.AF_INET, ("example.com", 443)),  # refused before any DNS lookup
    (socket.AF_INET6, ("2001:db8::1", 443, 0, 0)),
    (socket.AF_INET6, ("::ffff:198.51.100.1", 443, 0, 0)),
])
def test_connect_and_connect_ex_refuse_the_network(network_guard: Any, family: int, address: Any) -> None:
    for method in ("connect", "connect_ex"):
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            error = refused(network_guard, lambda: getattr(sock, method)(address))  # noqa: B023 - called at once
            assert repr(address) in str(error)


def test_create_connection_and_http_clients_are_refused(network_guard: Any) -> None:
    refused(network_guard, lambda: socket.create_connection(("192.0.2.10", 443), timeout=5))
    with pytest.raises(urllib.error.URLError, match=REFUSED):
        urllib.request.urlopen("http://192.0.2.10/", timeout=5)
    assert network_guard.blocked == ["('192.0.2.10', 80)"]
    network_guard.blocked.clear()


def test_loopback_and_unix_sockets_still_work(network_guard: Any, listener: int, tmp_path: Path) -> None:
    for host in ("127.0.0.1", "localhost"):
        with socket.create_connection((host, listener), timeout=5):
            pass
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        assert sock.connect_ex(("127.0.0.1", listener)) == 0
    path = str(tmp_path / "s.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server, \
            socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        server.bind(path)
        server.listen()
        client.connect(path)
    assert network_guard.blocked == []


@pytest.mark.parametrize("address", [("::1", 8080, 0, 0), ("::ffff:127.0.0.1", 8080, 0, 0)])
def test_loopback_ipv6_is_allowed(network_guard: Any, address: Any) -> None:
    # The guard's decision itself, so the test runs on machines without ::1 configured too.
    ipv6_socket = types.SimpleNamespace(family=socket.AF_INET6)
    network_guard.check(ipv6_socket, address)
    assert network_guard.blocked == []


def test_a_swallowed_attempt_still_fails_the_test() -> None:
    # network_guard_selftest.py is not a test module (never collected by a normal run): its one
    # test hides the refusal, as a retry loop or an "is it reachable?" probe would.
    selftest = Path(__file__).with_name("network_guard_selftest.py")
    child = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", str(selftest.relative_to(ROOT))],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert child.returncode == 1, child.stdout + child.stderr
    assert "1 passed, 1 error" in child.stdout
    assert "the test tried to reach the network: ('198.51.100.20', 80)" in child.stdout
