"""Per-user integration tokens, encrypted at rest, and the user-facing error when they are unusable.

Tokens live at ``users/{uid}/integrations/{provider}``. The document holds only AES-GCM
ciphertext, its nonce, the id of the key that sealed it and non-secret metadata (scopes, account
email, expiry); the associated data binds the ciphertext to its user and provider, so a document
copied to another user does not decrypt. The key comes from ``CREDENTIALS_ENCRYPTION_KEY``
(base64 of 32 bytes; in production a Secret Manager secret mounted as that variable).

```python
vault = CredentialVault(store, key, settings)
vault.put(uid, "google", IntegrationTokens(access_token="ya29...", refresh_token="1//...",
                                           expires_at=1767225600.0, scopes=[GMAIL_SEND_SCOPE]))
creds = vault.google_credentials(uid)   # refreshed (and stored back) when expired
token = vault.slack_token(uid)
token = vault.github_token(uid)
```
Missing, undecryptable, expired-without-refresh or revoked credentials raise
:class:`ConnectorError`: a ``ToolError``, so the model is told and the action ends ``failed``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import logging
import os
import threading
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from shared.config import Settings
from shared.errors import ConfigurationError, ToolError
from shared.formats import b64decode_any
from shared.state.docstore import DocStore
from shared.state.integrations_repo import IntegrationsRepo
from shared.wire import MAX_EPOCH_S, epoch_or_none

if TYPE_CHECKING:
    from google.auth.transport import Request
    from google.oauth2.credentials import Credentials

log = logging.getLogger("agent_runtime.connectors")

Provider = Literal["google", "slack", "github"]
PROVIDERS: tuple[Provider, ...] = ("google", "slack", "github")
SCHEMA_VERSION = 1
KEY_BYTES = 32
NONCE_BYTES = 12
REFRESH_MARGIN_S = 60.0
"""A token expiring within this margin is refreshed before use (a call must not race its expiry)."""


class ConnectorError(ToolError):
    """An integration cannot be used for this user (not connected, revoked, unreadable, API refused).

    User-facing: the message is told to the model and the action ends ``failed``.
    """

    def __init__(self, message: str, *, provider: str | None = None, reason: str = "unavailable") -> None:
        super().__init__(message)
        self.provider = provider
        self.reason = reason
        """One of: not_connected, revoked, unreadable, expired, not_configured, unauthorized, unavailable."""


class IntegrationTokens(BaseModel):
    """A user's tokens for one provider, as a backend hands them over after its OAuth flow.

    ``expires_at`` is epoch seconds (UTC). ``scopes`` and ``account_email`` are stored in clear
    as metadata; the tokens themselves only inside the ciphertext.
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)

    access_token: str = Field(min_length=1, max_length=8192)
    refresh_token: str | None = Field(default=None, min_length=1, max_length=8192)
    expires_at: float | None = Field(default=None, ge=0, le=MAX_EPOCH_S)
    scopes: list[str] = Field(default_factory=list, max_length=50)
    account_email: str | None = Field(default=None, max_length=320)
    team_id: str | None = Field(default=None, max_length=64)
    """Slack only: the workspace the token belongs to."""


class IntegrationStatus(BaseModel):
    """The non-secret view of a stored integration (safe to return to a client)."""

    model_config = ConfigDict(defer_build=True)
    provider: str
    connected: bool
    scopes: list[str] = Field(default_factory=list)
    account_email: str | None = None
    expires_at: float | None = None
    updated_at: float | None = None


def decode_key(raw: str) -> bytes:
    """The 32-byte key of ``CREDENTIALS_ENCRYPTION_KEY`` (standard or URL-safe base64)."""
    try:
        key = b64decode_any(raw)
    except ValueError as exc:
        raise ConfigurationError("CREDENTIALS_ENCRYPTION_KEY must be base64 of 32 bytes") from exc
    if len(key) != KEY_BYTES:
        raise ConfigurationError(f"CREDENTIALS_ENCRYPTION_KEY must decode to {KEY_BYTES} bytes, got {len(key)}")
    return key


def key_id(key: bytes) -> str:
    """A short, non-secret fingerprint of a key (tells which key sealed a document)."""
    return hashlib.sha256(b"agent-runtime-credentials\x00" + key).hexdigest()[:16]


def _label(provider: str) -> str:
    return {"google": "Google", "slack": "Slack", "github": "GitHub"}.get(provider, provider)


class CredentialVault:
    """Stores, reads and refreshes per-user integration tokens. Thread-safe; one per process.

    Args:
        store: The document store (Firestore or SQLite).
        key: The 32-byte AES-256-GCM key, or ``None`` when the deployment configured none (every
            use then raises :class:`ConnectorError` ``not_configured``, naming ``key_problem``).
        settings: Token URI and OAuth client id/secret for refreshing Google tokens.
    """

    def __init__(self, store: DocStore, key: bytes | None, settings: Settings, *,
                 key_problem: str = "CREDENTIALS_ENCRYPTION_KEY is unset") -> None:
        if key is not None and len(key) != KEY_BYTES:
            raise ConfigurationError(f"the credentials key must be {KEY_BYTES} bytes")
        self._key_problem = key_problem
        self._repo = IntegrationsRepo(store)
        self._key = key
        self._key_id = key_id(key) if key is not None else None
        self._settings = settings
        self._refresh_lock = threading.Lock()

    # ---- writing -------------------------------------------------------------------------------
    def put(self, uid: str, provider: Provider, tokens: IntegrationTokens) -> IntegrationStatus:
        """Store (replace) ``uid``'s tokens for ``provider``, encrypted. Returns the non-secret view."""
        _check_provider(provider)
        doc = self._seal(uid, provider, tokens)
        self._repo.put(uid, provider, doc)
        return _status(provider, doc)

    def delete(self, uid: str, provider: Provider) -> bool:
        """Forget ``uid``'s tokens for ``provider``; ``True`` if some were stored."""
        _check_provider(provider)
        return self._repo.delete(uid, provider)

    def status(self, uid: str, provider: Provider) -> IntegrationStatus:
        """Whether ``provider`` is connected for ``uid``, with its non-secret metadata."""
        _check_provider(provider)
        data = self._repo.get(uid, provider)
        if data is None:
            return IntegrationStatus(provider=provider, connected=False)
        return _status(provider, data)

    # ---- reading -------------------------------------------------------------------------------
    def tokens(self, uid: str, provider: Provider) -> IntegrationTokens:
        """The decrypted tokens; :class:`ConnectorError` when missing or unreadable."""
        _check_provider(provider)
        key = self._require_key(provider)
        data = self._repo.get(uid, provider)
        label = _label(provider)
        if data is None:
            raise ConnectorError(f"{label} is not connected for this user; ask them to connect it",
                                 provider=provider, reason="not_connected")
        if data.get("keyId") != self._key_id:
            log.warning("integration %s of %s sealed with key %s, current key %s", provider, uid,
                        data.get("keyId"), self._key_id)
            raise ConnectorError(f"the stored {label} credentials cannot be read; reconnect {label}",
                                 provider=provider, reason="unreadable")
        try:
            from cryptography.exceptions import InvalidTag
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM

            nonce = base64.b64decode(str(data["nonce"]), validate=True)
            ciphertext = base64.b64decode(str(data["ciphertext"]), validate=True)
            plain = AESGCM(key).decrypt(nonce, ciphertext, _aad(uid, provider))
            return IntegrationTokens.model_validate(json.loads(plain))
        except (KeyError, binascii.Error, ValueError, InvalidTag, ValidationError) as exc:
            log.warning("integration %s of %s does not decrypt: %s", provider, uid, type(exc).__name__)
            raise ConnectorError(f"the stored {label} credentials cannot be read; reconnect {label}",
                                 provider=provider, reason="unreadable") from None

    def slack_token(self, uid: str) -> str:
        """``uid``'s Slack token; :class:`ConnectorError` when missing or unreadable."""
        return self.tokens(uid, "slack").access_token

    def github_token(self, uid: str) -> str:
        """``uid``'s GitHub token (a fine-grained or classic personal access token, or a GitHub App
        user token); :class:`ConnectorError` when missing or unreadable. GitHub tokens are not
        refreshed here: an expired one is a 401, which tells the user to reconnect GitHub."""
        return self.tokens(uid, "github").access_token

    def google_credentials(self, uid: str) -> Credentials:
        """``uid``'s Google OAuth credentials, valid for at least a minute.

        An expired token is refreshed through google-auth at ``GOOGLE_TOKEN_URI`` and the new one is
        stored back (encrypted). A refresh the client library performs later (a 401 mid-call) is
        stored back too. ``invalid_grant`` (revoked or expired grant) raises :class:`ConnectorError`
        ``revoked``.
        """
        tokens = self.tokens(uid, "google")
        creds = self._credentials(uid, tokens)
        if _needs_refresh(tokens):
            import requests
            from google.auth.transport.requests import Request

            with self._refresh_lock, requests.Session() as session:
                creds.refresh(Request(session))  # type: ignore[no-untyped-call]
        return creds

    # ---- other secrets (a user's MCP servers) ---------------------------------------------------
    def seal_text(self, location: str, secret: str, label: str) -> dict[str, Any]:
        """``secret`` sealed for the document at ``location`` (its path is the associated data):
        ``{keyId, alg, nonce, ciphertext}``. :class:`ConnectorError` without a key."""
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        key = self._require_key(label)
        nonce = os.urandom(NONCE_BYTES)
        ciphertext = AESGCM(key).encrypt(nonce, secret.encode(), _location_aad(location))
        return {"keyId": self._key_id, "alg": "AES-256-GCM", "nonce": base64.b64encode(nonce).decode(),
                "ciphertext": base64.b64encode(ciphertext).decode()}

    def open_text(self, location: str, data: dict[str, Any], label: str) -> str:
        """What :meth:`seal_text` sealed; :class:`ConnectorError` ``unreadable`` when another key
        sealed it or it does not decrypt (never the secret in the message)."""
        key = self._require_key(label)
        if data.get("keyId") != self._key_id:
            raise ConnectorError(f"the stored {label} credentials cannot be read; connect it again",
                                 provider=label, reason="unreadable")
        try:
            from cryptography.exceptions import InvalidTag
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM

            nonce = base64.b64decode(str(data["nonce"]), validate=True)
            ciphertext = base64.b64decode(str(data["ciphertext"]), validate=True)
            return AESGCM(key).decrypt(nonce, ciphertext, _location_aad(location)).decode()
        except (KeyError, binascii.Error, ValueError, InvalidTag):
            raise ConnectorError(f"the stored {label} credentials cannot be read; connect it again",
                                 provider=label, reason="unreadable") from None

    # ---- internals -----------------------------------------------------------------------------
    def _credentials(self, uid: str, tokens: IntegrationTokens) -> Credentials:
        from google.oauth2.credentials import Credentials

        vault = self

        class StoringCredentials(Credentials):
            """Credentials that store a refreshed token back and map refresh failures to ours."""

            def refresh(self, request: Request) -> None:
                vault._refresh(uid, tokens, self, request, super().refresh)

        s = self._settings
        expiry = (datetime.fromtimestamp(tokens.expires_at, UTC).replace(tzinfo=None)
                  if tokens.expires_at is not None else None)  # google-auth compares naive UTC
        creds: Credentials = StoringCredentials(  # type: ignore[no-untyped-call]
            token=tokens.access_token, refresh_token=tokens.refresh_token, token_uri=s.google_token_uri,
            client_id=s.google_oauth_client_id, client_secret=s.google_oauth_client_secret,
            scopes=tokens.scopes or None, expiry=expiry)
        return creds

    def _refresh(self, uid: str, tokens: IntegrationTokens, creds: Credentials, request: Request,
                 do_refresh: Any) -> None:
        from google.auth.exceptions import RefreshError, TransportError

        if not tokens.refresh_token:
            raise ConnectorError("the Google access token expired and no refresh token is stored; reconnect Google",
                                 provider="google", reason="expired")
        s = self._settings
        if not (s.google_oauth_client_id and s.google_oauth_client_secret):
            raise ConnectorError("Google tokens cannot be refreshed on this server (no OAuth client configured)",
                                 provider="google", reason="not_configured")
        try:
            do_refresh(request)
        except RefreshError as exc:
            if "invalid_grant" in str(exc):
                raise ConnectorError("Google access was revoked or expired; ask the user to reconnect Google",
                                     provider="google", reason="revoked") from None
            log.warning("google token refresh failed for %s: %s", uid, exc)
            raise ConnectorError("Google refused to refresh the access token; try again later or reconnect",
                                 provider="google", reason="unavailable") from None
        except TransportError:
            raise ConnectorError("Google's token service is unreachable; try again later",
                                 provider="google", reason="unavailable") from None
        expires_at = creds.expiry.replace(tzinfo=UTC).timestamp() if creds.expiry is not None else None
        refreshed = tokens.model_copy(update={
            "access_token": creds.token,
            "refresh_token": creds.refresh_token or tokens.refresh_token,
            "expires_at": expires_at,
        })
        self.put(uid, "google", refreshed)
        tokens.access_token, tokens.expires_at = refreshed.access_token, refreshed.expires_at

    def _require_key(self, provider: str) -> bytes:
        if self._key is None:
            raise ConnectorError(f"{_label(provider)} is not available: integrations are not configured on this "
                                 f"server ({self._key_problem})", provider=provider, reason="not_configured")
        return self._key

    def _seal(self, uid: str, provider: str, tokens: IntegrationTokens) -> dict[str, Any]:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        key = self._require_key(provider)
        nonce = os.urandom(NONCE_BYTES)
        plain = tokens.model_dump_json(exclude_none=True).encode()
        ciphertext = AESGCM(key).encrypt(nonce, plain, _aad(uid, provider))
        return {
            "schemaVersion": SCHEMA_VERSION,
            "provider": provider,
            "alg": "AES-256-GCM",
            "keyId": self._key_id,
            "nonce": base64.b64encode(nonce).decode(),
            "ciphertext": base64.b64encode(ciphertext).decode(),
            "scopes": list(tokens.scopes),
            "accountEmail": tokens.account_email,
            "expiresAt": tokens.expires_at,
            "updatedAt": datetime.now(UTC).timestamp(),
        }


def _aad(uid: str, provider: str) -> bytes:
    return _location_aad(IntegrationsRepo.location(uid, provider))


def _location_aad(location: str) -> bytes:
    return f"agent-runtime/v{SCHEMA_VERSION}/{location}".encode()


def _check_provider(provider: str) -> None:
    if provider not in PROVIDERS:
        raise ValueError(f"unknown provider {provider!r}; expected one of {', '.join(PROVIDERS)}")


def _needs_refresh(tokens: IntegrationTokens) -> bool:
    if tokens.expires_at is None:
        return False
    return tokens.expires_at - REFRESH_MARGIN_S <= datetime.now(UTC).timestamp()


def _status(provider: str, data: dict[str, Any]) -> IntegrationStatus:
    """The stored connection's non-secret view. A value outside what the API can answer (a time
    out of range, written before it was validated) is shown as unknown and named in the log: one
    bad value must not make every later read of the user's integrations a 500."""
    times = {k: epoch_or_none(data.get(k)) for k in ("expiresAt", "updatedAt")}
    bad = [k for k, v in times.items() if v is None and data.get(k) is not None]
    scopes = data.get("scopes")
    if not (isinstance(scopes, list) and all(isinstance(s, str) for s in scopes)):
        if scopes is not None:
            bad.append("scopes")
        scopes = []
    email = data.get("accountEmail") if isinstance(data.get("accountEmail"), str) else None
    if bad:
        log.warning("stored integration %s has unreadable %s; shown as unknown", provider, ", ".join(bad))
    return IntegrationStatus(provider=provider, connected=True, scopes=list(scopes), account_email=email,
                             expires_at=times["expiresAt"], updated_at=times["updatedAt"])
