"""One script under bubblewrap.

The jail: every namespace unshared (user, mount, pid, network, ipc, uts, cgroup), so the script
has no network at all (not even loopback to the host), sees only its own processes, and a root
file system made of read-only binds of the system directories, an empty private ``/tmp`` and its
workspace at ``/workspace``, the only writable path it can reach. The environment is cleared. The
process tree runs under rlimits (address space, processes, CPU, file size, open files, no core
files) and as the workspace's own uid when the service is root. The wall time is enforced here:
past it the jail is killed (its pid namespace dies with its first process). bubblewrap leaves
an orphan per script, collected by ``sandbox.reaper`` after each one.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass

from sandbox import reaper
from sandbox.limits import Limits

WORKSPACE = "/workspace"
# Read-only binds of the system. /etc contributes only what programs need to start; the host's
# /etc (hosts, resolv.conf, credentials of any kind) stays out.
_SYSTEM = ("/usr", "/etc/alternatives", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
           "/etc/localtime", "/etc/ssl")
_MERGED = (("usr/bin", "/bin"), ("usr/sbin", "/sbin"), ("usr/lib", "/lib"), ("usr/lib64", "/lib64"))
_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8", "TERM": "dumb",
        "PWD": WORKSPACE, "TMPDIR": "/tmp", "GIT_CONFIG_NOSYSTEM": "1"}


class JailUnavailable(RuntimeError):
    """bubblewrap is missing: the service never falls back to a plain subprocess."""


@dataclass(frozen=True)
class ScriptResult:
    exit_code: int
    stdout: str
    stderr: str
    truncated: bool
    duration_ms: int
    timed_out: bool


def bwrap_path() -> str:
    found = shutil.which("bwrap")
    if found is None:
        raise JailUnavailable("bubblewrap (bwrap) is not installed: apt-get install -y bubblewrap")
    return found


def command(workspace_dir: str, script: str, limits: Limits) -> list[str]:
    """The bwrap command line running ``script`` with ``/bin/sh -c`` in ``workspace_dir``."""
    # --unshare-user explicitly: bubblewrap skips its automatic user namespace when it runs as uid 0
    # (the service in its own user namespace), and then needs capabilities it may not have.
    argv = [bwrap_path(), "--unshare-all", "--unshare-user", "--die-with-parent", "--new-session",
            "--hostname", "sandbox", "--cap-drop", "ALL"]
    for path in _SYSTEM:
        argv += ["--ro-bind-try", path, path]
    for target, link in _MERGED:
        if os.path.islink(link) or not os.path.exists(link):
            argv += ["--symlink", target, link]
        else:
            argv += ["--ro-bind", link, link]
    argv += ["--proc", "/proc", "--dev", "/dev",
             "--size", str(limits.tmp_bytes), "--tmpfs", "/tmp",
             "--bind", workspace_dir, WORKSPACE, "--remount-ro", "/", "--chdir", WORKSPACE, "--clearenv"]
    for key, value in _ENV.items():
        argv += ["--setenv", key, value]
    return [*argv, "--", "/bin/sh", "-c", script]


def _rlimits(limits: Limits, wall_s: float) -> list[str]:
    cpu = max(1, min(limits.cpu_s, int(wall_s) + 1))
    return ["prlimit", f"--as={limits.memory_bytes}", f"--nproc={limits.processes}", f"--cpu={cpu}",
            f"--fsize={limits.disk_bytes}", "--nofile=1024", "--core=0", "--"]


class _Capped:
    """Reads a pipe to its end, keeping the first ``cap`` bytes."""

    def __init__(self, pipe: object, cap: int) -> None:
        self.data = bytearray()
        self.over = False
        self._thread = threading.Thread(target=self._drain, args=(pipe, cap), daemon=True)
        self._thread.start()

    def _drain(self, pipe: object, cap: int) -> None:
        read = pipe.read  # type: ignore[attr-defined]
        while chunk := read(65536):
            room = cap - len(self.data)
            if len(chunk) > room:
                self.over = True
                chunk = chunk[:max(0, room)]
            self.data += chunk
        pipe.close()  # type: ignore[attr-defined]

    def text(self, timeout: float) -> str:
        self._thread.join(timeout)
        return self.data.decode("utf-8", errors="replace")


def run(workspace_dir: str, script: str, limits: Limits, *, wall_s: float, uid: int | None = None) -> ScriptResult:
    """Run ``script`` in the jail for at most ``wall_s`` seconds (capped by ``limits.wall_s``);
    as ``uid`` (and the same gid) when given."""
    wall_s = max(0.1, min(wall_s, limits.wall_s))
    argv = _rlimits(limits, wall_s) + command(workspace_dir, script, limits)
    start = time.monotonic()
    proc = reaper.popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                        start_new_session=True, close_fds=True, env={"PATH": "/usr/bin:/bin"},
                        user=uid, group=uid, extra_groups=None if uid is None else [])
    out = _Capped(proc.stdout, limits.output_bytes)
    err = _Capped(proc.stderr, limits.output_bytes)
    timed_out = False
    try:
        code = proc.wait(timeout=wall_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(proc.pid, signal.SIGKILL)  # bwrap dies; its pid namespace dies with it
        code = proc.wait()
    finally:
        reaper.release(proc)
    reaper.reap()  # bwrap's pid 1 of the jail, orphaned: see sandbox.reaper
    stdout, stderr = out.text(5.0), err.text(5.0)
    duration_ms = int((time.monotonic() - start) * 1000)
    if timed_out:
        stderr += f"\n[sandbox] the script was stopped after {wall_s:.1f} s (its time limit)"
    return ScriptResult(exit_code=code if code >= 0 else 128 - code, stdout=stdout, stderr=stderr,
                        truncated=out.over or err.over, duration_ms=duration_ms, timed_out=timed_out)
