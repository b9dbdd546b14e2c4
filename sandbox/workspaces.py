"""The workspaces of this service process: a directory per id, restored from its snapshot when
missing (another process held it, or this one restarted on an empty disk).

Every operation on one workspace holds that workspace's lock, so a read never sees a script half
done and two scripts of one workspace never overlap. After a script that changed the workspace
(names, sizes, change times), the workspace is packed and saved before the answer goes out.
"""

from __future__ import annotations

import os
import re
import shutil
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar

from sandbox import files, jail, mounts, snapshots
from sandbox.limits import Limits

T = TypeVar("T")
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{5,79}$")
_UID_BASE = 200_000
_UID_SPAN = 100_000


def _check_traversable(path: str) -> None:
    """Scripts run as other uids: every directory down to the workspaces must let them pass."""
    current = path
    while True:
        if not os.stat(current).st_mode & 0o001:
            raise ValueError(f"SANDBOX_ROOT {path}: {current} is not traversable by other users (chmod o+x)")
        parent = os.path.dirname(current)
        if parent == current:
            return
        current = parent


class WorkspaceNotFound(LookupError):
    pass


class BadWorkspaceId(ValueError):
    pass


@dataclass(frozen=True)
class ExecOutcome:
    result: jail.ScriptResult
    changed: bool
    snapshot_bytes: int
    snapshot_ms: int


class Workspaces:
    def __init__(self, root_dir: str, limits: Limits, store: snapshots.SnapshotStore, *,
                 real_root: bool, tmpfs: bool = True) -> None:
        self.root_dir = os.path.realpath(root_dir)
        self.limits = limits
        self.store = store
        self.real_root = real_root
        self.tmpfs = tmpfs
        os.makedirs(self.root_dir, mode=0o711, exist_ok=True)
        if real_root:
            _check_traversable(self.root_dir)
        self._present: set[str] = set()
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    # -- ids, uids, locks ------------------------------------------------------------------------
    def uid_of(self, workspace_id: str) -> int | None:
        """The uid a workspace's scripts run as (its own, so process limits are per workspace);
        ``None`` when the service is not real root (scripts keep the service's uid)."""
        if not self.real_root:
            return None
        return _UID_BASE + zlib.crc32(workspace_id.encode()) % _UID_SPAN

    def _dir(self, workspace_id: str) -> str:
        if not _ID.match(workspace_id):
            raise BadWorkspaceId(f"'{workspace_id[:100]}' is not a workspace id")
        return os.path.join(self.root_dir, workspace_id)

    @contextmanager
    def locked(self, workspace_id: str) -> Iterator[None]:
        with self._guard:
            lock = self._locks.setdefault(workspace_id, threading.Lock())
        with lock:
            yield

    # -- local presence ----------------------------------------------------------------------------
    def _make_local(self, workspace_id: str) -> str:
        path = self._dir(workspace_id)
        os.makedirs(path, mode=0o750, exist_ok=True)
        uid = self.uid_of(workspace_id)
        owner = os.getuid() if uid is None else uid
        if self.tmpfs:
            mounts.mount_tmpfs(path, self.limits.disk_bytes, uid=0 if uid is None else owner,
                               gid=0 if uid is None else owner)
        elif uid is not None:
            os.chown(path, owner, owner)
        self._present.add(workspace_id)
        return path

    def _drop_local(self, workspace_id: str) -> None:
        path = self._dir(workspace_id)
        if workspace_id in self._present:
            self._present.discard(workspace_id)
            if self.tmpfs:
                mounts.unmount(path)
        shutil.rmtree(path, ignore_errors=True)

    def _ensure(self, workspace_id: str) -> str:
        """The workspace's directory, restored from its snapshot when this process lacks it."""
        path = self._dir(workspace_id)
        if workspace_id in self._present:
            return path
        data = self.store.get(workspace_id)
        if data is None:
            raise WorkspaceNotFound(workspace_id)
        path = self._make_local(workspace_id)
        try:
            snapshots.unpack(data, path, uid=self.uid_of(workspace_id))
        except BaseException:
            self._drop_local(workspace_id)
            raise
        return path

    def save(self, workspace_id: str) -> int:
        data = snapshots.pack(self._dir(workspace_id))
        self.store.put(workspace_id, data)
        return len(data)

    # -- operations -----------------------------------------------------------------------------------
    def create(self, workspace_id: str, populate: Callable[[str, int | None], None] | None = None) -> bool:
        """A workspace, empty or filled by ``populate(path, uid)`` (a clone), saved at once so it
        outlives this process; ``False`` when it exists (nothing is done)."""
        with self.locked(workspace_id):
            path = self._dir(workspace_id)
            if workspace_id in self._present or self.store.get(workspace_id) is not None:
                return False
            if os.path.isdir(path):
                shutil.rmtree(path, ignore_errors=True)  # a mount point left by a dead process
            self._make_local(workspace_id)
            try:
                if populate is not None:
                    populate(path, self.uid_of(workspace_id))
                self.save(workspace_id)
            except BaseException:
                self._drop_local(workspace_id)
                raise
            return True

    def with_files(self, workspace_id: str, fn: Callable[[str, int | None], T]) -> T:
        """``fn(path, uid)`` on the workspace's files outside the jail (git push), then saved."""
        with self.locked(workspace_id):
            path = self._ensure(workspace_id)
            out = fn(path, self.uid_of(workspace_id))
            self.save(workspace_id)
            return out

    def exec(self, workspace_id: str, script: str, wall_s: float) -> ExecOutcome:
        with self.locked(workspace_id):
            path = self._ensure(workspace_id)
            before = files.fingerprint(path)
            result = jail.run(path, script, self.limits, wall_s=wall_s, uid=self.uid_of(workspace_id))
            changed = files.fingerprint(path) != before
            size, ms = 0, 0
            if changed:
                start = time.monotonic()
                size = self.save(workspace_id)
                ms = int((time.monotonic() - start) * 1000)
            return ExecOutcome(result=result, changed=changed, snapshot_bytes=size, snapshot_ms=ms)

    def read(self, workspace_id: str, path: str) -> files.FileText:
        with self.locked(workspace_id):
            return files.read(self._ensure(workspace_id), path, self.limits.read_bytes)

    def source_files(self, workspace_id: str, pattern: str | None) -> tuple[list[files.FileText], bool]:
        with self.locked(workspace_id):
            return files.source_files(self._ensure(workspace_id), pattern, self.limits.source_bytes)

    def listing(self, workspace_id: str, cap: int = 5000) -> tuple[list[tuple[str, int]], bool]:
        with self.locked(workspace_id):
            return files.listing(self._ensure(workspace_id), cap)

    def usage(self, workspace_id: str) -> int:
        with self.locked(workspace_id):
            st = os.statvfs(self._ensure(workspace_id))
            return (st.f_blocks - st.f_bfree) * st.f_frsize

    def destroy(self, workspace_id: str) -> bool:
        """Remove the local copy and the snapshot; ``False`` when neither existed."""
        with self.locked(workspace_id):
            existed = workspace_id in self._present or self.store.get(workspace_id) is not None
            self._drop_local(workspace_id)
            self.store.delete(workspace_id)
        with self._guard:
            self._locks.pop(workspace_id, None)
        return existed

    def forget_local(self) -> None:
        """Drop every local copy (the snapshots stay): what a restart on an empty disk looks like."""
        for workspace_id in list(self._present):
            with self.locked(workspace_id):
                self._drop_local(workspace_id)
