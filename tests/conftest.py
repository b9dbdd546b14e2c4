"""Session-wide fixtures: the emulators (one of each per test session) and the document stores.

- ``firestore_emulator`` / ``pubsub_emulator``: started on first use, stopped at session end;
  they set FIRESTORE_EMULATOR_HOST / PUBSUB_EMULATOR_HOST and GOOGLE_CLOUD_PROJECT. An emulator
  already named by FIRESTORE_EMULATOR_HOST (or PUBSUB_EMULATOR_HOST) at session start is reused.
  If one cannot start the tests using it ERROR; they are never skipped.
- ``firestore_docstore``: a FirestoreDocStore on emptied emulator data (client shared per session).
- ``sqlite_docstore``: a SqliteDocStore on a fresh file.
- ``docstore``: both, for the contract suite.
- ``network_guard`` (autouse, session): no test reaches the network, even on a machine that has
  one. ``socket.socket.connect`` / ``connect_ex`` (and so ``socket.create_connection``, urllib,
  httplib2, requests, asyncio) raise :class:`NetworkAccessBlocked` for any IP address outside
  127.0.0.0/8 and ::1 (IPv4-mapped loopback included); host names other than ``localhost`` are
  refused without being resolved. Other families (AF_UNIX) are untouched. A blocked attempt also
  fails the test that made it at teardown, even when the code under test swallowed the error.
  gRPC (the Firestore/Pub/Sub clients) connects from C and is not seen; it only talks to the
  local emulators. Subprocesses are not covered.

Sub-directory conftest files add their own fixtures; keep this one to processes and stores.
"""

from __future__ import annotations

import errno
import ipaddress
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from shared.state.docstore import DocStore
from shared.state.sqlite_docstore import SqliteDocStore
from tests.emulators import TEST_PROJECT, Emulator, reset_firestore, start_firestore, start_pubsub

if TYPE_CHECKING:
    from google.cloud import firestore

    from shared.state.firestore_docstore import FirestoreDocStore
    from tests.fakes.fake_gemini import FakeGemini


_LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})


class NetworkAccessBlocked(ConnectionRefusedError):
    """A test tried to connect beyond the loopback interface (see ``network_guard``)."""


def _is_loopback_ip(text: str) -> bool:
    try:
        ip = ipaddress.ip_address(text.split("%", 1)[0])  # drop an IPv6 scope ("fe80::1%eth0")
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def _is_loopback_host(host: str) -> bool:
    if _is_loopback_ip(host):
        return True
    name = host.lower().rstrip(".")
    if name not in _LOCAL_NAMES and not name.endswith(".localhost"):
        return False  # never resolved: a DNS query is itself network access
    try:
        infos = socket.getaddrinfo(name, None)
    except OSError:
        return False
    return bool(infos) and all(_is_loopback_ip(str(info[4][0])) for info in infos)


class NetworkGuard:
    """Refuses non-loopback connects; ``blocked`` lists the attempts of the current test."""

    def __init__(self) -> None:
        self.blocked: list[str] = []

    def check(self, sock: socket.socket, address: Any) -> None:
        if sock.family not in (socket.AF_INET, socket.AF_INET6):
            return  # AF_UNIX and other local families cannot leave the machine
        host = address[0] if isinstance(address, tuple) and address else address
        if isinstance(host, bytes):
            host = host.decode(errors="replace")
        if isinstance(host, str) and _is_loopback_host(host):
            return
        self.blocked.append(repr(address))
        raise NetworkAccessBlocked(errno.ECONNREFUSED, f"tests must not reach the network: connect to {address!r} "
                                   "refused (only 127.0.0.0/8, ::1, localhost and AF_UNIX are allowed; see "
                                   "network_guard in tests/conftest.py)")


@pytest.fixture(scope="session", autouse=True)
def network_guard() -> Iterator[NetworkGuard]:
    """Every test runs with non-loopback connects refused (see the module doc)."""
    guard = NetworkGuard()
    connect, connect_ex = socket.socket.connect, socket.socket.connect_ex

    def guarded_connect(self: socket.socket, address: Any) -> None:
        guard.check(self, address)
        connect(self, address)

    def guarded_connect_ex(self: socket.socket, address: Any) -> int:
        guard.check(self, address)
        return connect_ex(self, address)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(socket.socket, "connect", guarded_connect)
        mp.setattr(socket.socket, "connect_ex", guarded_connect_ex)
        yield guard


@pytest.fixture(autouse=True)
def _no_network_attempts(network_guard: NetworkGuard) -> Iterator[None]:
    """Fails a test at teardown when it tried to reach the network, even if the error was swallowed."""
    network_guard.blocked.clear()
    yield
    if network_guard.blocked:
        attempts, network_guard.blocked[:] = list(network_guard.blocked), []
        pytest.fail(f"the test tried to reach the network: {', '.join(attempts)} (blocked by network_guard in "
                    "tests/conftest.py)", pytrace=False)


@pytest.fixture(autouse=True)
def _no_leaked_signature_type() -> Iterator[None]:
    """functions-framework's ``create_app(target, source, signature_type)`` stores the signature
    type in ``os.environ["FUNCTION_SIGNATURE_TYPE"]``, where a later ``create_app`` without one
    would read it (an HTTP function served as a CloudEvent one). Each test starts without it."""
    os.environ.pop("FUNCTION_SIGNATURE_TYPE", None)
    yield
    os.environ.pop("FUNCTION_SIGNATURE_TYPE", None)


@pytest.fixture(autouse=True)
def _fresh_mcp_listings() -> Iterator[None]:
    """Each test lists its MCP servers itself (the per-instance listing cache starts empty); the
    cache's module is not imported by this fixture (cold-start tests look for it)."""
    import sys

    listings = sys.modules.get("shared.tools.mcp_listings")
    if listings is not None:
        listings.LISTINGS.clear()
    yield


def _emulator(name: str, env_var: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    existing = os.environ.get(env_var, "").strip()
    with pytest.MonkeyPatch.context() as mp:
        if existing:
            emu = Emulator(name, existing)
        else:
            log_dir = tmp_path_factory.mktemp(f"{name}-emulator")
            emu = start_firestore(log_dir=log_dir) if name == "firestore" else start_pubsub(log_dir=log_dir)
        mp.setenv(env_var, emu.host)
        mp.setenv("GOOGLE_CLOUD_PROJECT", TEST_PROJECT)
        try:
            yield emu
        finally:
            emu.stop()


@pytest.fixture(scope="session")
def firestore_emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    """The Firestore emulator of this session (FIRESTORE_EMULATOR_HOST points at it)."""
    yield from _emulator("firestore", "FIRESTORE_EMULATOR_HOST", tmp_path_factory)


@pytest.fixture(scope="session")
def pubsub_emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    """The Pub/Sub emulator of this session (PUBSUB_EMULATOR_HOST points at it)."""
    yield from _emulator("pubsub", "PUBSUB_EMULATOR_HOST", tmp_path_factory)


@pytest.fixture(scope="session")
def firestore_client(firestore_emulator: Emulator) -> Iterator[firestore.Client]:
    """One Firestore client per session, on the emulator's test project."""
    from google.cloud import firestore

    client = firestore.Client(project=TEST_PROJECT)
    yield client
    client.close()  # type: ignore[no-untyped-call]


@pytest.fixture
def firestore_docstore(firestore_emulator: Emulator, firestore_client: firestore.Client) -> FirestoreDocStore:
    """A FirestoreDocStore on an emptied emulator database."""
    from shared.state.firestore_docstore import FirestoreDocStore

    reset_firestore(firestore_emulator.host, TEST_PROJECT)
    return FirestoreDocStore(firestore_client)


@pytest.fixture
def sqlite_docstore(tmp_path: Path) -> Iterator[SqliteDocStore]:
    """A SqliteDocStore on a new file in the test's temporary directory."""
    store = SqliteDocStore(str(tmp_path / "state.sqlite3"))
    yield store
    store.close()


@pytest.fixture(params=["sqlite", pytest.param("firestore", marks=pytest.mark.firestore)])
def docstore(request: pytest.FixtureRequest) -> DocStore:
    """Each DocStore implementation in turn (for the contract suite)."""
    store: DocStore = request.getfixturevalue(f"{request.param}_docstore")
    return store


@pytest.fixture
def store(docstore: DocStore) -> DocStore:
    """Each real store in turn (Firestore through its emulator): the loop, approval, plan, limit,
    connector and workspace tests that need a store run on both."""
    return docstore


@pytest.fixture
def fake_gemini() -> Iterator[FakeGemini]:
    """A started fake Gemini for the real google-genai SDK (one per test: starting one takes
    milliseconds)."""
    from tests.fakes.fake_gemini import FakeGemini

    with FakeGemini() as fake:
        yield fake
