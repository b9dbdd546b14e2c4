"""Helpers shared by the Gmail/credentials tests: settings pointing at the fake, a vault, a context."""

from __future__ import annotations

import base64
import dataclasses
import os
import time
from typing import Any

from devfakes.google import FakeGoogle
from shared.config import Settings
from shared.connectors import Connectors, IntegrationTokens, create_connectors
from shared.state.docstore import DocStore
from shared.state.users_repo import UsersRepo
from shared.tools.context import ToolContext

KEY = base64.b64encode(bytes(range(32))).decode()
OTHER_KEY = base64.b64encode(os.urandom(32)).decode()
REFRESH = "1//fake-refresh-token"


def google_settings(fake: FakeGoogle, **overrides: Any) -> Settings:
    base = Settings(state_backend="sqlite", auth_mode="local", dispatcher="none", run_deadline_s=30.0,
                    credentials_encryption_key=KEY, google_token_uri=fake.token_uri,
                    google_oauth_client_id=fake.client_id, google_oauth_client_secret=fake.client_secret,
                    gmail_api_base_url=fake.base_url)
    return dataclasses.replace(base, **overrides)


def fresh_tokens(fake: FakeGoogle, **overrides: Any) -> IntegrationTokens:
    """Valid for an hour, with a refresh token the fake knows."""
    fields: dict[str, Any] = {"access_token": fake.access_token, "refresh_token": REFRESH,
                              "expires_at": time.time() + 3600,
                              "scopes": ["https://www.googleapis.com/auth/gmail.modify"],
                              "account_email": "alice@example.com"}
    fields.update(overrides)
    return IntegrationTokens(**fields)


def connected(fake: FakeGoogle, store: DocStore, uid: str = "alice", **settings: Any) -> Connectors:
    conn = create_connectors(google_settings(fake, **settings), store)
    conn.vault.put(uid, "google", fresh_tokens(fake))
    return conn


def tool_context(conn: Connectors, store: DocStore, uid: str = "alice", action_id: str = "act-1") -> ToolContext:
    return ToolContext(uid=uid, run_id="run-1", action_id=action_id, users=UsersRepo(store),
                       settings=conn.settings, connectors=conn)
