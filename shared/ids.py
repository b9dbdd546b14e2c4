"""Identifiers of threads, runs, messages, actions, approvals and invocations: ``<prefix>_<20 hex>``.

A module of its own (no imports of ours) so that deciding an approval or resuming a run that is gone
mints ids without loading the agent loop (cold start, issue 2).
"""

from __future__ import annotations

import os


def new_id(prefix: str) -> str:
    """80 random bits as 20 lowercase hex digits (what ``uuid4().hex[:20]`` gave, minus its fixed
    version digit, at a third of its cost: a tool step mints three ids)."""
    return f"{prefix}_{os.urandom(10).hex()}"
