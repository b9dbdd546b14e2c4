"""Identifiers of threads, runs, messages, actions, approvals and invocations: ``<prefix>_<20 hex>``.

A module of its own (no imports of ours) so that deciding an approval or resuming a run that is gone
mints ids without loading the agent loop (cold start, issue 2).
"""

from __future__ import annotations

import uuid


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:20]}"
