"""The stores the benchmarks run on: SQLite files, and Firestore on the official emulator.

The emulator is the one named by ``FIRESTORE_EMULATOR_HOST`` if set, else one started (and
stopped) here.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
import urllib.request
import uuid
from collections.abc import Iterator

from shared.state.docstore import DocStore

PROJECT = "demo-agent-bench"


@contextlib.contextmanager
def firestore_emulator() -> Iterator[str]:
    """``host:port`` of a running Firestore emulator for the duration of the block."""
    host = os.environ.get("FIRESTORE_EMULATOR_HOST", "").strip()
    if host:
        yield host
        return
    with _start_emulator() as started:
        yield started


@contextlib.contextmanager
def _start_emulator() -> Iterator[str]:
    """The official emulator jar on a free port (see ARCHITECTURE.md), stopped afterwards."""
    sdk = subprocess.run(["gcloud", "info", "--format=value(installation.sdk_root)"], capture_output=True,
                         text=True, check=True).stdout.strip()
    jar = os.path.join(sdk, "platform", "cloud-firestore-emulator", "cloud-firestore-emulator.jar")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    host = f"127.0.0.1:{port}"
    proc = subprocess.Popen(["java", "-cp", jar, "com.google.cloud.datastore.emulator.firestore.CloudFirestore",
                             "start", "--host=127.0.0.1", f"--port={port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://{host}/", timeout=1) as resp:
                    if resp.read().strip() == b"Ok":
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the Firestore emulator did not start")
            time.sleep(0.1)
        yield host
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def firestore_store(host: str | None = None) -> Iterator[DocStore]:
    """A FirestoreDocStore on the emulator, in a fresh project so earlier data never interferes."""
    from shared.state.firestore_docstore import FirestoreDocStore

    with contextlib.ExitStack() as stack:
        if host is None:
            host = stack.enter_context(firestore_emulator())
        os.environ["FIRESTORE_EMULATOR_HOST"] = host
        from google.cloud import firestore

        client = firestore.Client(project=f"{PROJECT}-{uuid.uuid4().hex[:8]}")
        store = FirestoreDocStore(client, owns_client=True)
        stack.callback(store.close)
        yield store


@contextlib.contextmanager
def sqlite_store(path: str) -> Iterator[DocStore]:
    from shared.state.sqlite_docstore import SqliteDocStore

    store = SqliteDocStore(path)
    try:
        yield store
    finally:
        store.close()
