"""The credential vault on both real stores: encryption at rest, unusable credentials, refresh."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator

import pytest
from google.oauth2.credentials import Credentials

from devfakes.google import FakeGoogle
from shared.config import Settings
from shared.connectors import ConnectorError, CredentialVault, IntegrationTokens, create_connectors
from shared.connectors.credentials import decode_key
from shared.connectors.gmail import GmailClient
from shared.errors import ConfigurationError
from shared.state.docstore import DocStore, Write
from shared.state.paths import integration as integration_path
from tests.connectors.gmail_support import KEY, OTHER_KEY, REFRESH, fresh_tokens, google_settings


@pytest.fixture
def fake() -> Iterator[FakeGoogle]:
    with FakeGoogle() as f:
        yield f


def vault(store: DocStore, fake: FakeGoogle, key: str = KEY, **settings: object) -> CredentialVault:
    return create_connectors(google_settings(fake, credentials_encryption_key=key, **settings), store).vault


def test_tokens_are_encrypted_at_rest_and_round_trip(store: DocStore, fake: FakeGoogle) -> None:
    v = vault(store, fake)
    tokens = fresh_tokens(fake, access_token="ya29.secret-access", refresh_token="1//secret-refresh")
    status = v.put("alice", "google", tokens)
    assert status.connected and status.account_email == "alice@example.com"
    doc = store.get(integration_path("alice", "google"))
    assert doc is not None
    dumped = json.dumps(doc.data)
    assert "secret-access" not in dumped and "secret-refresh" not in dumped
    assert doc.data["alg"] == "AES-256-GCM" and doc.data["schemaVersion"] == 1
    assert set(doc.data) >= {"ciphertext", "nonce", "keyId", "scopes", "accountEmail", "expiresAt"}
    assert doc.data["scopes"] == ["https://www.googleapis.com/auth/gmail.modify"]
    assert v.tokens("alice", "google") == tokens
    v.put("alice", "slack", IntegrationTokens(access_token="xoxp-slack-secret", team_id="T1"))
    assert v.slack_token("alice") == "xoxp-slack-secret"
    assert "xoxp" not in json.dumps(store.get(integration_path("alice", "slack")).data)  # type: ignore[union-attr]


def test_each_write_uses_a_fresh_nonce(store: DocStore, fake: FakeGoogle) -> None:
    v = vault(store, fake)
    v.put("alice", "google", fresh_tokens(fake))
    first = store.get(integration_path("alice", "google"))
    v.put("alice", "google", fresh_tokens(fake))
    second = store.get(integration_path("alice", "google"))
    assert first is not None and second is not None
    assert first.data["nonce"] != second.data["nonce"]


def test_missing_credentials_are_a_connector_error(store: DocStore, fake: FakeGoogle) -> None:
    v = vault(store, fake)
    with pytest.raises(ConnectorError, match="Google is not connected") as exc:
        v.google_credentials("alice")
    assert exc.value.reason == "not_connected"
    with pytest.raises(ConnectorError, match="Slack is not connected"):
        v.slack_token("alice")


def test_wrong_key_is_a_connector_error(store: DocStore, fake: FakeGoogle) -> None:
    vault(store, fake).put("alice", "google", fresh_tokens(fake))
    with pytest.raises(ConnectorError, match="cannot be read; reconnect Google") as exc:
        vault(store, fake, key=OTHER_KEY).google_credentials("alice")
    assert exc.value.reason == "unreadable"


def test_tampered_or_moved_ciphertext_does_not_decrypt(store: DocStore, fake: FakeGoogle) -> None:
    v = vault(store, fake)
    v.put("alice", "google", fresh_tokens(fake))
    doc = store.get(integration_path("alice", "google"))
    assert doc is not None
    # The same sealed document under another user: the associated data binds it to alice.
    store.commit([Write("set", integration_path("mallory", "google"), doc.data)])
    with pytest.raises(ConnectorError, match="cannot be read"):
        v.google_credentials("mallory")
    raw = bytearray(base64.b64decode(doc.data["ciphertext"]))
    raw[0] ^= 1
    store.commit([Write("update", integration_path("alice", "google"),
                        {"ciphertext": base64.b64encode(bytes(raw)).decode()})])
    with pytest.raises(ConnectorError, match="cannot be read"):
        v.google_credentials("alice")


def test_without_a_key_every_use_is_a_connector_error(store: DocStore, fake: FakeGoogle) -> None:
    conn = create_connectors(google_settings(fake, credentials_encryption_key=None), store)
    with pytest.raises(ConnectorError, match="CREDENTIALS_ENCRYPTION_KEY is unset"):
        conn.vault.put("alice", "google", fresh_tokens(fake))
    with pytest.raises(ConnectorError, match="not configured"):
        conn.google_credentials("alice")
    malformed = create_connectors(google_settings(fake, credentials_encryption_key="not-a-key"), store)
    with pytest.raises(ConnectorError, match="malformed"):
        malformed.slack_token("alice")


def test_key_configuration_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    assert decode_key(KEY) == bytes(range(32))
    assert decode_key(base64.urlsafe_b64encode(bytes(range(32))).decode().rstrip("=")) == bytes(range(32))
    with pytest.raises(ConfigurationError):
        decode_key(base64.b64encode(b"short").decode())
    monkeypatch.setenv("CREDENTIALS_ENCRYPTION_KEY", "%%%")
    with pytest.raises(ConfigurationError, match="CREDENTIALS_ENCRYPTION_KEY"):
        Settings.from_env()
    monkeypatch.setenv("CREDENTIALS_ENCRYPTION_KEY", KEY)
    assert Settings.from_env().credentials_encryption_key == KEY
    assert KEY not in repr(Settings.from_env())


def test_delete_and_status(store: DocStore, fake: FakeGoogle) -> None:
    v = vault(store, fake)
    assert not v.status("alice", "google").connected
    v.put("alice", "google", fresh_tokens(fake))
    assert v.status("alice", "google").connected
    assert v.delete("alice", "google") is True
    assert v.delete("alice", "google") is False
    with pytest.raises(ConnectorError, match="not connected"):
        v.google_credentials("alice")


def test_expired_token_is_refreshed_and_stored_back_encrypted(store: DocStore, fake: FakeGoogle) -> None:
    v = vault(store, fake)
    v.put("alice", "google", fresh_tokens(fake, access_token="ya29.old", expires_at=time.time() - 10))
    creds = v.google_credentials("alice")
    assert creds.token is not None and creds.token.startswith("ya29.refreshed-")
    refresh = [r for r in fake.requests if r.path == "/token"]
    assert len(refresh) == 1 and refresh[0].method == "POST"
    assert refresh[0].form() == {"grant_type": "refresh_token", "refresh_token": REFRESH,
                                 "client_id": fake.client_id, "client_secret": fake.client_secret,
                                 "scope": "https://www.googleapis.com/auth/gmail.modify"}
    stored = v.tokens("alice", "google")
    assert stored.access_token == creds.token and stored.refresh_token == REFRESH
    assert stored.expires_at is not None and stored.expires_at > time.time() + 3000
    doc = store.get(integration_path("alice", "google"))
    assert doc is not None and creds.token not in json.dumps(doc.data)
    # The refreshed token works against Gmail; no second refresh happens.
    with GmailClient(creds, base_url=fake.base_url) as client:
        client.search("x")
    assert len([r for r in fake.requests if r.path == "/token"]) == 1
    assert v.google_credentials("alice").token == creds.token


def test_a_401_mid_call_refreshes_and_stores_back(store: DocStore, fake: FakeGoogle) -> None:
    v = vault(store, fake)
    # Not expired by its clock, but Gmail no longer accepts it.
    v.put("alice", "google", fresh_tokens(fake, access_token="ya29.rejected"))
    creds = v.google_credentials("alice")
    with GmailClient(creds, base_url=fake.base_url) as client:
        client.search("x")
    gmail = [r for r in fake.requests if r.path.startswith("/gmail/")]
    assert gmail[0].headers["authorization"] == "Bearer ya29.rejected"
    assert gmail[-1].headers["authorization"].startswith("Bearer ya29.refreshed-")
    assert v.tokens("alice", "google").access_token == gmail[-1].headers["authorization"].split()[1]


def test_revoked_grant_is_a_connector_error(store: DocStore, fake: FakeGoogle) -> None:
    v = vault(store, fake)
    v.put("alice", "google", fresh_tokens(fake, expires_at=time.time() - 10))
    fake.revoke(REFRESH)
    with pytest.raises(ConnectorError, match="revoked") as exc:
        v.google_credentials("alice")
    assert exc.value.reason == "revoked"


def test_expired_without_refresh_token_or_client_is_a_connector_error(store: DocStore, fake: FakeGoogle) -> None:
    v = vault(store, fake)
    v.put("alice", "google", fresh_tokens(fake, refresh_token=None, expires_at=time.time() - 10))
    with pytest.raises(ConnectorError, match="no refresh token"):
        v.google_credentials("alice")
    v2 = vault(store, fake, google_oauth_client_secret=None)
    v2.put("alice", "google", fresh_tokens(fake, expires_at=time.time() - 10))
    with pytest.raises(ConnectorError, match="no OAuth client configured"):
        v2.google_credentials("alice")


def test_credentials_carry_the_configured_token_uri(store: DocStore, fake: FakeGoogle) -> None:
    v = vault(store, fake)
    v.put("alice", "google", fresh_tokens(fake))
    creds = v.google_credentials("alice")
    assert isinstance(creds, Credentials)
    assert creds.token_uri == fake.token_uri and creds.token == fake.access_token
    assert not [r for r in fake.requests if r.path == "/token"]
