"""Our A2A server as ``make dev`` runs it (``devserver.py`` processes), for the A2A tests: the model is
the scripted agent behind the fake Gemini server (``scripted_agent.py``), the store SQLite (one
process) or the Firestore emulator (several processes sharing it), and requests reach the processes
through the round-robin proxy (``proxy.py``)."""

from __future__ import annotations

import base64
import contextlib
import os
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from bench.load import LIMIT_ENV, dev_server, server_env
from tests.a2a.proxy import RoundRobinProxy
from tests.a2a.scripted_agent import ScriptedAgent
from tests.fakes.fake_gemini import FakeGemini


def sqlite_env(model_env: dict[str, str], path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "K_SERVICE"}
    for name, value in LIMIT_ENV.items():
        env.setdefault(name, value)
    env.update(model_env)
    env.update({"STATE_BACKEND": "sqlite", "SQLITE_PATH": str(path), "AUTH_MODE": "local",
                "CREDENTIALS_ENCRYPTION_KEY": base64.b64encode(secrets.token_bytes(32)).decode(),
                "MCP_ALLOW_PRIVATE_URLS": "true"})
    return env


@dataclass
class A2aServers:
    proxy: RoundRobinProxy
    agent: ScriptedAgent
    ports: list[int]
    model: FakeGemini
    """The fake Gemini the servers' model calls reach (``model.settings()`` points a runtime there)."""


@contextlib.contextmanager
def a2a_servers(tmp: Path, *, processes: int, firestore_host: str | None = None, project: str = "demo-a2a",
                agent: ScriptedAgent | None = None, extra_env: dict[str, str] | None = None) -> Iterator[A2aServers]:
    """``processes`` dev servers (on Firestore when ``firestore_host``, else one SQLite file) behind
    one round-robin proxy."""
    agent = agent or ScriptedAgent()
    with FakeGemini() as fake, contextlib.ExitStack() as stack:
        fake.handler = agent
        if firestore_host:
            env = server_env(firestore_host, project, fake.env())
            env["MCP_ALLOW_PRIVATE_URLS"] = "true"
        else:
            env = sqlite_env(fake.env(), tmp / "a2a.sqlite3")
        env.update(extra_env or {})
        ports = [stack.enter_context(dev_server(env, tmp / f"server-{i}"))[0] for i in range(processes)]
        proxy = stack.enter_context(RoundRobinProxy(ports))
        yield A2aServers(proxy, agent, ports, fake)
