"""Workspace-relative paths and reads of workspace files.

A path names a file inside the workspace: relative, no ``..`` segment, no NUL, and resolving
(symlinks followed) to a place inside the workspace. Anything else is a :class:`PathRefused`.
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass

_SKIP_DIRS = {".git", "node_modules", "__pycache__", ".venv", "venv", ".mypy_cache", ".pytest_cache", ".tox"}


class PathRefused(ValueError):
    """A path that does not name a file inside the workspace."""


def resolve(root: str, path: str) -> str:
    """The real path of workspace-relative ``path`` under ``root``; refuses escapes."""
    if not path or "\x00" in path:
        raise PathRefused("the path is empty or holds a NUL byte")
    if path.startswith("/") or path.startswith("\\"):
        raise PathRefused(f"'{path[:200]}' is absolute: paths are relative to the workspace")
    if ".." in path.replace("\\", "/").split("/"):
        raise PathRefused(f"'{path[:200]}' leaves the workspace ('..')")
    real_root = os.path.realpath(root)
    full = os.path.realpath(os.path.join(real_root, path))
    if full != real_root and not full.startswith(real_root + os.sep):
        raise PathRefused(f"'{path[:200]}' leads out of the workspace (a symlink)")
    return full


@dataclass(frozen=True)
class FileText:
    path: str
    content: str
    size: int
    truncated: bool
    binary: bool


def read(root: str, path: str, cap: int) -> FileText:
    full = resolve(root, path)
    if not os.path.exists(full):
        raise FileNotFoundError(path)
    if not os.path.isfile(full):
        raise PathRefused(f"'{path[:200]}' is not a file")
    size = os.path.getsize(full)
    with open(full, "rb") as f:
        data = f.read(cap)
    binary = b"\x00" in data[:8192]
    return FileText(path=path, content="" if binary else data.decode("utf-8", errors="replace"),
                    size=size, truncated=size > cap, binary=binary)


def source_files(root: str, pattern: str | None, cap: int, *, per_file: int = 64 * 1024) -> tuple[list[FileText], bool]:
    """Text files of the workspace (``pattern``: a glob on the relative path, e.g. ``src/**/*.py``),
    in path order, until ``cap`` bytes of content; ``True`` when some were left out. Version
    control and dependency folders are skipped; symlinks are not followed."""
    real_root = os.path.realpath(root)
    out: list[FileText] = []
    used = 0
    truncated = False
    for dirpath, dirnames, filenames in os.walk(real_root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, real_root)
            if os.path.islink(full) or not os.path.isfile(full):
                continue
            if pattern and not (fnmatch.fnmatch(rel, pattern) or fnmatch.fnmatch(name, pattern)):
                continue
            item = read(real_root, rel, min(per_file, cap))
            if item.binary:
                continue
            if used + len(item.content) > cap:
                truncated = True
                return out, truncated
            used += len(item.content)
            out.append(item)
    return out, truncated


def listing(root: str, cap: int) -> tuple[list[tuple[str, int]], bool]:
    """``(path, size)`` of the workspace's files in path order (version control and dependency
    folders skipped, symlinks listed but not followed), at most ``cap``; ``True`` when cut."""
    real_root = os.path.realpath(root)
    out: list[tuple[str, int]] = []
    for dirpath, dirnames, filenames in os.walk(real_root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        for name in sorted(filenames):
            if len(out) >= cap:
                return out, True
            full = os.path.join(dirpath, name)
            out.append((os.path.relpath(full, real_root), os.lstat(full).st_size))
    return out, False


def fingerprint(root: str) -> int:
    """A hash of every entry's name, type, size and change time: equal before and after a script
    that changed nothing (a snapshot is saved only when it differs)."""
    parts: list[tuple[str, int, int, int]] = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            try:
                st = os.lstat(full)
            except FileNotFoundError:
                continue
            parts.append((full, st.st_mode, st.st_size, st.st_ctime_ns))
    try:
        st = os.lstat(root)
        parts.append((root, st.st_mode, st.st_size, st.st_ctime_ns))
    except FileNotFoundError:
        pass
    return hash(tuple(sorted(parts)))
