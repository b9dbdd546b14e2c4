"""``DEV_FAKES=1 make dev``: the connectors against local fakes of their APIs, and an MCP server.

Starts the fakes of GitHub, Slack, Gmail (with Google's token endpoint) and Google Calendar on
free loopback ports, seeds each with a little data, and points the runtime at them through the
same endpoint overrides the tests use (``GITHUB_API_BASE_URL``, ``SLACK_API_BASE_URL``,
``GMAIL_API_BASE_URL``, ``CALENDAR_API_BASE_URL``, ``GOOGLE_TOKEN_URI`` and the OAuth client).
A user connects a provider with the fake's token (``TOKENS``, printed at start): the real
integrations route, the real vault and the real client libraries are used, only the far end is
local. When ``MCP_SERVERS`` is not set and ``mcp-server-time`` is installed (``make test``
installs it), the deployment also gets that MCP server as ``time`` (stdio).

Why the fakes live here and not under ``tests/``: ``make dev`` must start them without importing
the tests (which are not part of what a user runs, and pull in pytest). They are not part of the
deployed bundle either (``scripts/bundle.sh`` ships ``main.py``, ``functions/`` and ``shared/``
only), and nothing in ``shared/`` imports them: they are development tools, like ``devserver.py``.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import Any

from devfakes.calendar import FakeCalendar
from devfakes.github import FakeGitHub
from devfakes.google import FakeGoogle
from devfakes.slack import FakeSlack

REPO = "octo/hello"
CHANNEL = ("C0GENERAL", "general")

TOKENS: dict[str, dict[str, Any]] = {
    "github": {"accessToken": "ghp_fakeGitHubToken0123456789"},
    "slack": {"accessToken": "xoxp-fake-slack-token", "teamId": "T0FAKE"},
    "google": {"accessToken": "ya29.fake-access-token", "refreshToken": "1//fake-refresh-token",
               "expiresIn": 3600},
}
"""What to POST to ``/api/integrations/{provider}`` to connect each provider to its fake."""

MCP_TIME = {"name": "time", "command": [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"]}


@dataclass
class DevFakes:
    github: FakeGitHub
    slack: FakeSlack
    google: FakeGoogle
    calendar: FakeCalendar
    mcp_time: bool

    def close(self) -> None:
        for fake in (self.github, self.slack, self.google, self.calendar):
            fake.close()

    def banner(self, port: int) -> str:
        """What ``make dev`` prints: where the fakes are, and how to connect each provider."""
        lines = [f"Dev fakes (DEV_FAKES=1): GitHub {self.github.base_url} (repository {REPO}), "
                 f"Slack {self.slack.base_url} (#{CHANNEL[1]}), Gmail {self.google.base_url}, "
                 f"Calendar {self.calendar.base_url}; MCP server time: "
                 + ("on (mcp-server-time)" if self.mcp_time else "off (pip install mcp-server-time, or make test)")]
        for provider, body in TOKENS.items():
            lines.append(f"  connect {provider}: curl -s localhost:{port}/api/integrations/{provider} "
                         "-H \"Authorization: Bearer dev:$USER\" -H 'Content-Type: application/json' "
                         f"-d '{json.dumps(body)}'")
        return "\n".join(lines)


def seed(github: FakeGitHub, slack: FakeSlack, google: FakeGoogle, calendar: FakeCalendar) -> None:
    github.add_repo(REPO, description="A small repository on the local fake GitHub",
                    files={"README.md": b"# Hello\n\nA repository served by the fake GitHub of `make dev`.\n",
                           "src/hello.py": b"print('hello')\n"})
    github.add_issue(REPO, "The README link is broken", body="The link to the docs answers 404.",
                     labels=["bug"])
    slack.add_channel(CHANNEL[0], CHANNEL[1], is_member=True)
    slack.add_message(CHANNEL[0], text="Welcome to #general on the fake Slack.")
    slack.add_message(CHANNEL[0], text="The release is planned for Friday.")
    google.add_message("t0001", sender="Ada <ada@example.com>", to="me@example.com", subject="Train tickets",
                       text="Your tickets for Friday are attached.")
    calendar.add_calendar("primary")
    calendar.add_event("primary", summary="Team sync", start="2026-12-01T09:00:00Z", end="2026-12-01T09:30:00Z")


def start(env: MutableMapping[str, str]) -> DevFakes:
    """Start and seed the fakes, and set ``env`` (the process's environment, before the runtime reads
    its settings) to use them. Variables already set are kept (an explicit choice wins)."""
    github = FakeGitHub(token=TOKENS["github"]["accessToken"]).start()
    slack = FakeSlack(token=TOKENS["slack"]["accessToken"]).start()
    google = FakeGoogle().start()
    calendar = FakeCalendar(token=google.access_token).start()
    google.valid_tokens.add(google.access_token)
    seed(github, slack, google, calendar)
    for name, value in (("GITHUB_API_BASE_URL", github.base_url), ("SLACK_API_BASE_URL", slack.base_url),
                        ("GMAIL_API_BASE_URL", google.base_url), ("CALENDAR_API_BASE_URL", calendar.base_url),
                        ("GOOGLE_TOKEN_URI", google.token_uri), ("GOOGLE_OAUTH_CLIENT_ID", google.client_id),
                        ("GOOGLE_OAUTH_CLIENT_SECRET", google.client_secret)):
        env.setdefault(name, value)
    mcp_time = not env.get("MCP_SERVERS", "").strip() and importlib.util.find_spec("mcp_server_time") is not None
    if mcp_time:
        env["MCP_SERVERS"] = json.dumps([MCP_TIME])
    return DevFakes(github, slack, google, calendar, mcp_time)
