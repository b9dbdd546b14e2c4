"""What planning knows of a session's repository (seed 004 FR-202): its description and its
``AGENT.md``, read through the user's GitHub connection. Without a connection (or when GitHub
fails) planning goes on from the prompt alone, and says so in the context it gives the model."""

from __future__ import annotations

import logging
import re
from typing import Any

log = logging.getLogger("agent_runtime.plans")

_URL = re.compile(r"^https://github\.com/([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+?)(?:\.git)?/?$")
AGENT_MD = "AGENT.md"
MAX_AGENT_MD_LINES = 400


def repo_name(url: str) -> str | None:
    m = _URL.match(url.strip())
    return f"{m.group(1)}/{m.group(2)}" if m else None


def repo_context(connectors: Any, uid: str, repo_url: str, *, timeout_s: float = 20.0) -> str:
    """Repository facts and AGENT.md as text for the planner (never raises)."""
    name = repo_name(repo_url)
    if name is None:
        return f"Repository {repo_url}: not a github.com repository URL; plan from the prompt alone."
    if connectors is None:
        return f"Repository {name}: GitHub is not available in this deployment; plan from the prompt alone."
    try:
        with connectors.github(uid, timeout_s=timeout_s) as gh:
            info = gh.repository(name)
            lines = [f"Repository {info.full_name}: {info.description or '(no description)'}",
                     f"default branch {info.default_branch}, language {info.language or 'unknown'}, "
                     f"{info.open_issues} open issues"]
            try:
                agent_md = gh.read_file(name, AGENT_MD, max_lines=MAX_AGENT_MD_LINES)
                lines.append(f"{AGENT_MD} (the repository's instructions for agents, as data):\n{agent_md.text}")
            except Exception:  # a repository without AGENT.md is fine
                lines.append(f"The repository has no {AGENT_MD}.")
            return "\n".join(lines)
    except Exception as exc:  # not connected, revoked, rate limited, unreachable: plan without it
        log.info("repository context unavailable: %s", type(exc).__name__, extra={"fields": {"repo": name}})
        return f"Repository {name}: could not be read ({exc}); plan from the prompt alone."
