"""Start, probe, reset and stop the official Firestore and Pub/Sub emulators (Google Cloud CLI).

Each emulator runs in its own process group, so stopping it also stops every child (the Pub/Sub
launcher is gcloud -> shell script -> java). Output goes to a log file whose tail is quoted when
an emulator fails to start. A failure raises ``EmulatorError``: tests that need an emulator
must fail, never skip, when it is missing.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TEST_PROJECT = "demo-agent-runtime-test"
START_TIMEOUT_S = 90.0
FIRESTORE_JAR = "platform/cloud-firestore-emulator/cloud-firestore-emulator.jar"
FIRESTORE_MAIN = "com.google.cloud.datastore.emulator.firestore.CloudFirestore"


class EmulatorError(RuntimeError):
    """An emulator could not be started or reached."""


@dataclass
class Emulator:
    """A running emulator: ``host`` is ``"127.0.0.1:PORT"``; ``process`` is None when reused."""

    name: str
    host: str
    process: subprocess.Popen[bytes] | None = None
    log_path: Path | None = None
    _stopped: bool = field(default=False, repr=False)

    def stop(self) -> None:
        """Stop the whole process group: SIGTERM, then SIGKILL if it lingers."""
        if self.process is None or self._stopped:
            return
        self._stopped = True
        pgid = self.process.pid
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)
        # The launcher may exit before its Java child: kill what is left of the group.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@functools.cache
def sdk_root() -> Path:
    """The Google Cloud CLI's installation root (asked of ``gcloud`` once per process)."""
    gcloud = shutil.which("gcloud")
    if gcloud is None:
        raise EmulatorError("gcloud is not on PATH: install the Google Cloud CLI to run emulator tests")
    try:
        out = subprocess.run([gcloud, "info", "--format=value(installation.sdk_root)"], check=True,
                             capture_output=True, text=True, timeout=60).stdout.strip()
    except (subprocess.SubprocessError, OSError) as exc:
        raise EmulatorError(f"`gcloud info` failed: {exc}") from exc
    if not out:
        raise EmulatorError("`gcloud info` did not report an SDK root")
    return Path(out)


def http_get(url: str, timeout: float = 2.0) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return int(resp.status), resp.read().decode("utf-8", "replace")


def http_request(method: str, url: str, timeout: float = 10.0) -> int:
    req = urllib.request.Request(url, method=method)
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return int(resp.status)


def _log_tail(path: Path | None, lines: int = 30) -> str:
    if path is None or not path.exists():
        return "(no log)"
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def _spawn(name: str, argv: list[str], log_dir: Path) -> tuple[subprocess.Popen[bytes], Path]:
    log_path = log_dir / f"{name}-{os.getpid()}.log"
    with open(log_path, "wb") as log:
        try:
            proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True)
        except OSError as exc:
            raise EmulatorError(f"cannot start the {name} emulator ({argv[0]}): {exc}") from exc
    return proc, log_path


def _wait_ready(emu: Emulator, *, expect: str | None) -> None:
    """Poll ``GET http://host/`` until it answers (with ``expect`` in the body if given)."""
    assert emu.process is not None
    deadline = time.monotonic() + START_TIMEOUT_S
    last = "no answer"
    while time.monotonic() < deadline:
        if emu.process.poll() is not None:
            raise EmulatorError(f"the {emu.name} emulator exited with code {emu.process.returncode}; "
                                f"log {emu.log_path}:\n{_log_tail(emu.log_path)}")
        try:
            status, body = http_get(f"http://{emu.host}/", timeout=1.0)
            if expect is None or expect in body:
                return
            last = f"HTTP {status}: {body[:100]!r}"
        except urllib.error.HTTPError as exc:
            if expect is None:
                return
            last = f"HTTP {exc.code}"
        except OSError as exc:
            last = str(exc)
        time.sleep(0.1)
    emu.stop()
    raise EmulatorError(f"the {emu.name} emulator did not become ready within {START_TIMEOUT_S:.0f} s "
                        f"({last}); log {emu.log_path}:\n{_log_tail(emu.log_path)}")


def _start(name: str, argv: list[str], host: str, *, expect: str | None, log_dir: Path | None) -> Emulator:
    proc, log_path = _spawn(name, argv, log_dir or Path(tempfile.gettempdir()))
    emu = Emulator(name, host, proc, log_path)
    atexit.register(emu.stop)  # a backstop if the session dies before its teardown
    _wait_ready(emu, expect=expect)
    return emu


def start_firestore(*, log_dir: Path | None = None) -> Emulator:
    """Start the Firestore emulator (the Java jar directly: faster than ``gcloud emulators``)."""
    jar = sdk_root() / FIRESTORE_JAR
    if not jar.exists():
        raise EmulatorError(f"Firestore emulator not installed ({jar} missing): "
                            "gcloud components install cloud-firestore-emulator")
    java = shutil.which("java")
    if java is None:
        raise EmulatorError("java is not on PATH: the Firestore emulator needs a Java runtime")
    port = free_port()
    argv = [java, "-cp", str(jar), FIRESTORE_MAIN, "start", "--host=127.0.0.1", f"--port={port}"]
    return _start("firestore", argv, f"127.0.0.1:{port}", expect="Ok", log_dir=log_dir)


def start_pubsub(project: str = TEST_PROJECT, *, log_dir: Path | None = None) -> Emulator:
    """Start the Pub/Sub emulator through ``gcloud beta emulators pubsub start``."""
    gcloud = shutil.which("gcloud")
    if gcloud is None:
        raise EmulatorError("gcloud is not on PATH: install the Google Cloud CLI to run emulator tests")
    port = free_port()
    argv = [gcloud, "beta", "emulators", "pubsub", "start", f"--host-port=127.0.0.1:{port}",
            f"--project={project}", "--quiet"]
    return _start("pubsub", argv, f"127.0.0.1:{port}", expect=None, log_dir=log_dir)


def reset_firestore(host: str, project: str = TEST_PROJECT) -> None:
    """Delete every document of ``project`` in the emulator at ``host``."""
    url = f"http://{host}/emulator/v1/projects/{project}/databases/(default)/documents"
    try:
        http_request("DELETE", url)
    except OSError as exc:
        raise EmulatorError(f"cannot reset the Firestore emulator at {host}: {exc}") from exc


@contextlib.contextmanager
def pubsub_topic(prefix: str) -> Iterator[tuple[str, Callable[[], list[Any]]]]:
    """A new topic on the (started) Pub/Sub emulator, its name and a pull of its messages (at most
    10 a call, acknowledged once read); both deleted afterwards."""
    from google.cloud import pubsub_v1

    name = f"{prefix}-{free_port()}"
    publisher, subscriber = pubsub_v1.PublisherClient(), pubsub_v1.SubscriberClient()
    topic = publisher.topic_path(TEST_PROJECT, name)
    publisher.create_topic(name=topic)
    sub = subscriber.subscription_path(TEST_PROJECT, f"{name}-pull")
    subscriber.create_subscription(name=sub, topic=topic)

    def pull() -> list[Any]:
        got = subscriber.pull(subscription=sub, max_messages=10, timeout=10)
        if got.received_messages:
            subscriber.acknowledge(subscription=sub, ack_ids=[m.ack_id for m in got.received_messages])
        return [m.message for m in got.received_messages]

    try:
        yield name, pull
    finally:
        subscriber.delete_subscription(subscription=sub)
        publisher.delete_topic(topic=topic)
        subscriber.close()
