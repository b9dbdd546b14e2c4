"""The service's children, and the orphans it adopts.

bubblewrap leaves one orphan per script: its own pid 1 of the jail (the reaper inside the pid
namespace) hands the script's exit status to the outer ``bwrap``, which exits at once, and that
pid 1 ends a moment later with no parent. Orphans go to the nearest subreaper, else to pid 1; in
the service's container pid 1 is the service itself, which never waited for them. Each stayed a
zombie counted against its uid's RLIMIT_NPROC, and after about ``Limits.processes`` scripts a
workspace could start no more (``bwrap: Can't fork for pid 1: Resource temporarily unavailable``).

So the service makes itself the subreaper of everything below it (``adopt_orphans``, whatever its
pid), starts its children through ``popen`` (so it knows which exited children some thread still
waits for) and waits for every other exited child after each script and git command (``reap``), and every few
seconds besides (``reap_every``: an orphan that ends after the call that would have collected it).
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import threading
import time
from typing import Any

_PR_SET_CHILD_SUBREAPER = 36
_waited: set[int] = set()  # children started by ``popen`` that their caller still waits for
_lock = threading.Lock()


def adopt_orphans() -> None:
    """Become the subreaper of this process's descendants (``prctl(PR_SET_CHILD_SUBREAPER)``)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl(PR_SET_CHILD_SUBREAPER): {os.strerror(err)}")


def popen(argv: list[str], **kwargs: Any) -> subprocess.Popen[Any]:
    """``subprocess.Popen``, registered until ``release``: ``reap`` never takes its exit status."""
    with _lock:  # registered before any ``reap`` can see it exit
        proc: subprocess.Popen[Any] = subprocess.Popen(argv, **kwargs)
        _waited.add(proc.pid)
    return proc


def release(proc: subprocess.Popen[Any]) -> None:
    """``proc`` has been waited for by its caller."""
    with _lock:
        _waited.discard(proc.pid)


def reap() -> int:
    """Wait for exited children that no caller of ``popen`` waits for; how many were collected.

    It peeks at one exited child at a time (``waitid(WNOWAIT)``, no scan of /proc) and stops at
    one a caller still has to wait for: the rest are collected by the next call."""
    reaped = 0
    with _lock:
        while True:
            try:
                found = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:  # no children at all
                return reaped
            if found is None or found.si_pid == 0 or found.si_pid in _waited:
                return reaped
            os.waitpid(found.si_pid, 0)  # exited: returns at once
            reaped += 1


def reap_every(seconds: float) -> threading.Thread:
    """A daemon thread calling ``reap`` every ``seconds``."""
    def loop() -> None:
        while True:
            time.sleep(seconds)
            reap()

    thread = threading.Thread(target=loop, name="reaper", daemon=True)
    thread.start()
    return thread
