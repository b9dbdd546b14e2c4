"""The service's private mount namespace and one size-capped tmpfs per workspace.

A workspace is a tmpfs of ``Limits.disk_bytes`` mounted in the service's own mount namespace, so
a script cannot write past its quota (ENOSPC), no other process on the machine sees the files, and
when the service process dies its workspaces die with it (the snapshots are the durable copy). On
Cloud Run the local disk is memory anyway, so a tmpfs costs what a directory would.

Root with ``CAP_SYS_ADMIN`` enters a new mount namespace; any other process (not root, or root in
a container without that capability) enters a new user namespace first (mapped to itself) and is
root there, which is enough to mount a tmpfs; its scripts then run as that same uid. Both need a kernel that allows the
namespaces bubblewrap needs too. Called once, before any thread starts (``unshare`` of a user
namespace refuses a multi-threaded process).
"""

from __future__ import annotations

import ctypes
import os

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
MS_NOSUID = 2
MS_NODEV = 4
MS_REC = 16384
MS_PRIVATE = 1 << 18
MNT_DETACH = 2

_libc = ctypes.CDLL(None, use_errno=True)


class MountError(OSError):
    """The kernel refused a namespace or a mount."""


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise MountError(err, f"{what}: {os.strerror(err)}")


def enter_private_namespace() -> bool:
    """Enter a mount namespace of this process's own; ``True`` when the process stays real root
    (it may then run scripts as other uids), ``False`` when it is root only in its user namespace."""
    uid, gid = os.getuid(), os.getgid()
    real_root = uid == 0 and _libc.unshare(CLONE_NEWNS) == 0
    if not real_root:  # not root, or root without CAP_SYS_ADMIN (a container): a user namespace first
        _check(_libc.unshare(CLONE_NEWUSER | CLONE_NEWNS), "unshare(user and mount namespaces)")
        with open("/proc/self/setgroups", "w") as f:
            f.write("deny")
        with open("/proc/self/uid_map", "w") as f:
            f.write(f"0 {uid} 1")
        with open("/proc/self/gid_map", "w") as f:
            f.write(f"0 {gid} 1")
    # Mounts made here never propagate back to the machine's namespace.
    _check(_libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "make / private")
    return real_root


def mount_tmpfs(path: str, size_bytes: int, *, uid: int, gid: int) -> None:
    """A tmpfs of ``size_bytes`` at ``path`` whose root belongs to ``uid``:``gid``."""
    options = f"size={size_bytes},mode=0750,uid={uid},gid={gid}".encode()
    _check(_libc.mount(b"tmpfs", path.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, options), f"mount tmpfs at {path}")


def unmount(path: str) -> None:
    _check(_libc.umount2(path.encode(), MNT_DETACH), f"unmount {path}")
