"""Per-user access to external services (Gmail, Calendar, Slack, GitHub) for tools.

A tool receives a :class:`Connectors` as ``ctx.connectors`` and asks it for the user's
credentials; the service adapters (``gmail.py``, ``calendar.py``, ``slack.py``, ``github.py``, and
``google_http.py``, the Google adapters' shared plumbing) are the only modules that import their
vendor SDK (tests/connectors/test_import_boundary.py), and they are imported only when a connector
tool runs (cold start: a function that never calls one never loads ``googleapiclient``).

```python
conn = require_connectors(ctx.connectors)        # ConnectorError when the runtime has none
creds = conn.google_credentials(ctx.uid)          # google.oauth2.credentials.Credentials
with conn.calendar(ctx.uid, timeout_s=ctx.call_budget("Google Calendar", 30), deadline=ctx.deadline) as cal:
    cal.search(query="standup")
token = conn.slack_token(ctx.uid)
with conn.github(ctx.uid, timeout_s=20) as gh:    # GitHubClient at GITHUB_API_BASE_URL
    gh.repository("octo/hello")
```
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from shared.config import Settings
from shared.connectors.credentials import (
    PROVIDERS,
    ConnectorError,
    CredentialVault,
    IntegrationStatus,
    IntegrationTokens,
    Provider,
    decode_key,
)
from shared.errors import ConfigurationError
from shared.state.docstore import DocStore

if TYPE_CHECKING:
    from google.oauth2.credentials import Credentials

    from shared.connectors.calendar import CalendarClient
    from shared.connectors.github import GitHubClient
    from shared.connectors.gmail import GmailClient
    from shared.connectors.slack import SlackClient

log = logging.getLogger("agent_runtime.connectors")

__all__ = [
    "PROVIDERS",
    "ConnectorError",
    "Connectors",
    "CredentialVault",
    "IntegrationStatus",
    "IntegrationTokens",
    "Provider",
    "create_connectors",
    "require_connectors",
]


@dataclass
class Connectors:
    """The user-credential vault plus the endpoint settings of every adapter."""

    vault: CredentialVault
    settings: Settings

    def google_credentials(self, uid: str) -> Credentials:
        """``uid``'s Google credentials (refreshed and stored back when expired)."""
        return self.vault.google_credentials(uid)

    def slack_token(self, uid: str) -> str:
        """``uid``'s Slack token."""
        return self.vault.slack_token(uid)

    def github_token(self, uid: str) -> str:
        """``uid``'s GitHub token."""
        return self.vault.github_token(uid)

    def github(self, uid: str, *, timeout_s: float = 30.0) -> GitHubClient:
        """A GitHub REST client acting as ``uid`` (``GITHUB_API_BASE_URL`` overrides the endpoint)."""
        from shared.connectors.github import GitHubClient

        return GitHubClient(self.github_token(uid), base_url=self.settings.github_api_base_url, timeout_s=timeout_s)

    def gmail(self, uid: str, *, timeout_s: float = 30.0, deadline: float | None = None) -> GmailClient:
        """A Gmail v1 client acting as ``uid`` (``GMAIL_API_BASE_URL`` overrides the endpoint); no
        retry or backoff starts past ``deadline`` (``time.monotonic()``)."""
        from shared.connectors.gmail import GmailClient
        from shared.connectors.google_http import RetryPolicy

        credentials = self.google_credentials(uid)
        sender = self.vault.status(uid, "google").account_email  # the From header, when known
        return GmailClient(credentials, base_url=self.settings.gmail_api_base_url, sender=sender,
                           retry=RetryPolicy(deadline=deadline), timeout_s=timeout_s)

    def calendar(self, uid: str, *, timeout_s: float = 30.0, deadline: float | None = None) -> CalendarClient:
        """A Calendar v3 client acting as ``uid`` (``CALENDAR_API_BASE_URL`` overrides the endpoint)."""
        from shared.connectors.calendar import CalendarClient
        from shared.connectors.google_http import RetryPolicy

        return CalendarClient(self.google_credentials(uid), base_url=self.settings.calendar_api_base_url,
                              retry=RetryPolicy(deadline=deadline), timeout_s=timeout_s)

    def slack(self, uid: str, *, timeout_s: float = 30.0) -> SlackClient:
        """A Slack Web API client acting as ``uid`` (``SLACK_API_BASE_URL`` overrides the endpoint); a
        ``Retry-After`` wait longer than ``timeout_s`` fails at once."""
        from shared.connectors.slack import SlackClient

        return SlackClient(self.slack_token(uid), base_url=self.settings.slack_api_base_url,
                           timeout_s=max(1, math.ceil(timeout_s)), max_retry_after_s=timeout_s)


def create_connectors(settings: Settings, store: DocStore) -> Connectors:
    """Connectors over ``store``. Never raises: without a usable ``CREDENTIALS_ENCRYPTION_KEY``
    every use is a ConnectorError (the tool call fails; tools without connectors are unaffected)."""
    key: bytes | None = None
    problem = "CREDENTIALS_ENCRYPTION_KEY is unset"
    if settings.credentials_encryption_key:
        try:
            key = decode_key(settings.credentials_encryption_key)
        except ConfigurationError as exc:
            log.error("connectors disabled: %s", exc)
            problem = "CREDENTIALS_ENCRYPTION_KEY is malformed"
    return Connectors(vault=CredentialVault(store, key, settings, key_problem=problem), settings=settings)


def require_connectors(value: Any) -> Connectors:
    """``ctx.connectors`` as :class:`Connectors`, or a user-facing error when the runtime has none."""
    if isinstance(value, Connectors):
        return value
    raise ConnectorError("integrations are not available in this deployment", reason="not_configured")
