"""Resident memory of a process from /proc (Linux)."""

from __future__ import annotations

MIB = 1024 * 1024


def rss_mib(pid: int | str = "self") -> dict[str, float]:
    """``VmRSS`` (current) and ``VmHWM`` (peak) in MiB."""
    out: dict[str, float] = {}
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = round(int(value.split()[0]) * 1024 / MIB, 1)
    return out


def cpu_seconds(pid: int | str = "self") -> float:
    """User + system CPU time a process has used so far (its threads included, children not)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rpartition(")")[2].split()  # after the command name, which may hold spaces
    import os

    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
