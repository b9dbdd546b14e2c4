"""The limits of one script and of one workspace, read from the environment once."""

from __future__ import annotations

import os
from dataclasses import dataclass


def _int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from exc
    if value <= 0:
        raise ValueError(f"{name} must be > 0, got {value}")
    return value


@dataclass(frozen=True)
class Limits:
    disk_bytes: int = 1 << 30
    """The size of a workspace (its tmpfs): writes past it fail with ENOSPC."""
    memory_bytes: int = 1 << 30
    """Address space of each process of a script (RLIMIT_AS)."""
    processes: int = 128
    """Processes of a script at once (RLIMIT_NPROC, per workspace uid)."""
    cpu_s: int = 600
    """CPU seconds of each process (RLIMIT_CPU); the wall time is bounded separately."""
    wall_s: float = 600.0
    """The longest a script may run; a request asks for less (the caller's time left)."""
    output_bytes: int = 64 * 1024
    """stdout and stderr are each cut at this many bytes (``truncated``)."""
    tmp_bytes: int = 64 << 20
    """The script's private /tmp (a tmpfs inside the jail, gone when the script ends)."""
    read_bytes: int = 256 * 1024
    """The most ``read`` returns of one file."""
    source_bytes: int = 512 * 1024
    """The most ``source-files`` returns in all."""

    @classmethod
    def from_env(cls) -> Limits:
        d = cls()
        return cls(
            disk_bytes=_int("SANDBOX_DISK_BYTES", d.disk_bytes),
            memory_bytes=_int("SANDBOX_MEMORY_BYTES", d.memory_bytes),
            processes=_int("SANDBOX_PROCESSES", d.processes),
            cpu_s=_int("SANDBOX_CPU_S", d.cpu_s),
            wall_s=float(_int("SANDBOX_WALL_S", int(d.wall_s))),
            output_bytes=_int("SANDBOX_OUTPUT_BYTES", d.output_bytes),
            tmp_bytes=_int("SANDBOX_TMP_BYTES", d.tmp_bytes),
            read_bytes=_int("SANDBOX_READ_BYTES", d.read_bytes),
            source_bytes=_int("SANDBOX_SOURCE_BYTES", d.source_bytes),
        )
