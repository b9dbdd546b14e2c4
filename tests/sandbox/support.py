"""The sandbox service as its own process (``python -m sandbox.server``), for tests and benches.

``SandboxProcess.start(tmp, ...)`` waits for ``/healthz``; ``stop()`` kills it (its workspaces die
with its mount namespace; the snapshots stay where ``SANDBOX_SNAPSHOT_DIR``/``_BUCKET`` says).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from shared.connectors.sandbox import SandboxClient
from tests.emulators import free_port

ROOT = Path(__file__).resolve().parents[2]



def zombie_children(pid: int) -> list[int]:
    """The exited children of process ``pid`` nobody has waited for yet (zombies), from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_bytes().rpartition(b")")[2].split()
        except OSError:
            continue
        if fields[0] == b"Z" and int(fields[1]) == pid:
            found.append(int(entry.name))
    return found


def no_zombies_within(pid: int, seconds: float) -> list[int]:
    """``zombie_children(pid)`` once it is empty, or as it is after ``seconds``."""
    deadline = time.monotonic() + seconds
    while (found := zombie_children(pid)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return found


@dataclass
class SandboxProcess:
    process: subprocess.Popen[bytes]
    url: str
    key: str
    log: Path
    root: str

    @classmethod
    def start(cls, base: Path, *, env: dict[str, str] | None = None,
              snapshot_dir: Path | None = None) -> SandboxProcess:
        port = free_port()
        key = secrets.token_urlsafe(24)
        base.mkdir(parents=True, exist_ok=True)
        # The workspaces' uids must be able to reach their directory: not under pytest's 0700 dirs.
        root = tempfile.mkdtemp(prefix="sandbox-workspaces-", dir="/tmp")
        os.chmod(root, 0o711)
        full = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PORT": str(port), "SANDBOX_KEY": key,
                "SANDBOX_ROOT": root, "PYTHONPATH": str(ROOT)}
        if snapshot_dir is not None:
            full["SANDBOX_SNAPSHOT_DIR"] = str(snapshot_dir)
        full.update(env or {})
        log = base / f"sandbox-{port}.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen([sys.executable, "-m", "sandbox.server"], cwd=ROOT, env=full, stdout=out,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        box = cls(process=proc, url=f"http://127.0.0.1:{port}", key=key, log=log, root=root)
        box._wait_ready()
        return box

    def _wait_ready(self, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the sandbox service exited ({self.process.returncode}):\n{self.log.read_text()}")
            with contextlib.suppress(OSError, urllib.error.URLError), \
                    urllib.request.urlopen(self.url + "/healthz", timeout=1) as resp:
                if resp.status == 200:
                    return
            time.sleep(0.05)
        raise RuntimeError(f"the sandbox service did not answer within {timeout_s} s:\n{self.log.read_text()}")

    def client(self) -> SandboxClient:
        return SandboxClient(self.url, key=self.key)

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)
        shutil.rmtree(self.root, ignore_errors=True)  # empty mount points: the tmpfs died with the process


@dataclass
class StorageEmulator:
    """``gcp-storage-emulator`` (PyPI) in memory with one bucket; the official client reaches it
    through ``STORAGE_EMULATOR_HOST``."""

    process: subprocess.Popen[bytes]
    host: str
    bucket: str

    @classmethod
    def start(cls, log_dir: Path, bucket: str = "sandbox-snapshots") -> StorageEmulator:
        exe = Path(sys.executable).with_name("gcp-storage-emulator")
        if not exe.exists():
            raise RuntimeError("gcp-storage-emulator is not installed: pip install -r requirements-dev.txt")
        port = free_port()
        log = log_dir / f"storage-emulator-{port}.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen([str(exe), "start", "--host=127.0.0.1", f"--port={port}", "--in-memory",
                                     f"--default-bucket={bucket}", "--quiet"], stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        emu = cls(process=proc, host=f"http://127.0.0.1:{port}", bucket=bucket)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"gcp-storage-emulator exited:\n{log.read_text()}")
            with contextlib.suppress(OSError, urllib.error.URLError), \
                    urllib.request.urlopen(f"{emu.host}/storage/v1/b/{bucket}", timeout=1) as resp:
                if resp.status == 200:
                    return emu
            time.sleep(0.1)
        raise RuntimeError(f"gcp-storage-emulator did not answer:\n{log.read_text()}")

    def env(self) -> dict[str, str]:
        return {"SANDBOX_SNAPSHOT_BUCKET": self.bucket, "STORAGE_EMULATOR_HOST": self.host,
                "GOOGLE_CLOUD_PROJECT": "local"}

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)
