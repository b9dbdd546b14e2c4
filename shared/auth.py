"""Who is calling: Firebase ID tokens and session cookies, or a dev identity for local runs.

Every HTTP function calls ``authenticator.authenticate(headers, cookies)`` first and gets a
:class:`Principal` or an :class:`~shared.errors.Unauthenticated` (401). Pick the implementation with
:func:`create_authenticator` (``AUTH_MODE``):

* ``firebase`` (:class:`FirebaseAuthenticator`): ``Authorization: Bearer <Firebase ID token>`` or the
  ``__session`` cookie holding a Firebase session cookie. Signatures are checked against Google's
  public certificates (RS256 only), fetched over HTTP and cached for their ``Cache-Control: max-age``.
  If an ``Authorization`` header is present it alone decides; the cookie is read only without it.
  Where the deployment names admin service accounts (``ADMIN_SERVICE_ACCOUNTS``, the stack config's
  ``agent-runtime:admin``), a Bearer token issued by Google (``iss`` accounts.google.com) is verified
  as a service account's ID token instead: Google's certificates, audience ``ADMIN_AUDIENCE``, a
  verified ``email`` among those accounts; the principal then carries ``service_account``.
* ``local`` (:class:`LocalAuthenticator`): ``Authorization: Bearer dev:<uid>``, for development and
  tests; it refuses to exist on Cloud Run (``K_SERVICE`` set).

google-auth is imported only when a Firebase token is verified, so local mode and cold starts of
functions that never verify a token do not pay for it.
"""

from __future__ import annotations

import binascii
import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, Protocol

from shared.errors import ConfigurationError, Unauthenticated, Unavailable
from shared.formats import b64decode_any

if TYPE_CHECKING:
    from google.auth.transport import Request as HttpRequest

    from shared.config import Settings

ID_TOKEN_CERTS_URL = "https://www.googleapis.com/robot/v1/metadata/x509/securetoken@system.gserviceaccount.com"
SESSION_COOKIE_CERTS_URL = "https://www.googleapis.com/identitytoolkit/v3/relyingparty/publicKeys"
GOOGLE_CERTS_URL = "https://www.googleapis.com/oauth2/v1/certs"
GOOGLE_ISSUERS = ("https://accounts.google.com", "accounts.google.com")
SESSION_COOKIE_NAME = "__session"
# Tolerated clock difference between Google's token servers and this instance, in seconds.
CLOCK_SKEW_S = 10
# Without a usable max-age the certificates are still kept this long, so a burst of requests does
# not become a burst of fetches.
DEFAULT_CERTS_TTL_S = 60.0
UNKNOWN_KID_REFETCH_S = 60.0
MAX_TOKEN_CHARS = 16 * 1024

_log = logging.getLogger(__name__)
_DEV_UID = re.compile(r"(?!\.\.?$)(?!__.*__$)[A-Za-z0-9_.@-]{1,128}")
"""A dev token's uid, usable as a document id in both stores: Firestore refuses the ids ``.`` and
``..`` and reserves ``__...__`` (a run of user ``..`` answered 500 there)."""
_MAX_AGE = re.compile(r"max-age\s*=\s*(\d+)", re.IGNORECASE)

TokenKind = Literal["id_token", "session_cookie", "google_id_token"]


@dataclass(frozen=True)
class Principal:
    """The authenticated caller. ``claims`` are the verified token claims (read-only)."""

    uid: str
    email: str | None = None
    claims: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    service_account: str | None = None
    """The Google service account of a verified Google ID token (only admin service accounts get in)."""

    def is_admin(self, admin_uids: tuple[str, ...], admin_service_accounts: tuple[str, ...] = ()) -> bool:
        """The admin role: a service account the stack config names (``ADMIN_SERVICE_ACCOUNTS``), a uid
        the deployment names (``ADMIN_UIDS``) or make dev's ``dev-admin:`` token."""
        if self.service_account is not None:
            return self.service_account in admin_service_accounts
        return self.uid in admin_uids or (self.claims.get("admin") is True and self.claims.get("dev") is True)


class Authenticator(Protocol):
    def authenticate(self, headers: Mapping[str, str], cookies: Mapping[str, str]) -> Principal:
        """Return the caller, or raise :class:`Unauthenticated` when credentials are missing or invalid."""
        ...


def _header(headers: Mapping[str, str], name: str) -> str | None:
    """HTTP header names are case-insensitive; callers pass whatever their framework gives."""
    wanted = name.lower()
    for key, value in headers.items():
        if key.lower() == wanted:
            return value
    return None


def _bearer(headers: Mapping[str, str]) -> str | None:
    """The bearer token of the ``Authorization`` header, None without the header."""
    value = _header(headers, "Authorization")
    if value is None:
        return None
    scheme, _, token = value.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthenticated("The Authorization header must be 'Bearer <token>'")
    return token.strip()


class LocalAuthenticator:
    """Development identity from ``Authorization: Bearer dev:<uid>`` or, without the header, the
    ``__session`` cookie ``dev:<uid>`` (as a Firebase session cookie is read in production: a
    browser's ``EventSource`` cannot set headers); refused on Cloud Run."""

    def __init__(self) -> None:
        if os.environ.get("K_SERVICE"):
            raise ConfigurationError(
                "LocalAuthenticator accepts unsigned dev identities and must not run on Cloud Run "
                "(K_SERVICE is set); use AUTH_MODE=firebase")

    def authenticate(self, headers: Mapping[str, str], cookies: Mapping[str, str]) -> Principal:
        token = _bearer(headers)
        if token is None:
            token = cookies.get(SESSION_COOKIE_NAME) or None
        if token is None:
            raise Unauthenticated("Missing credentials: local mode expects 'Authorization: Bearer dev:<uid>' "
                                  f"(or the {SESSION_COOKIE_NAME} cookie dev:<uid>)")
        prefix, sep, uid = token.partition(":")
        if prefix == "dev-admin" and sep and _DEV_UID.fullmatch(uid):
            # make dev's admin principal (the admin API): its own uid, never a user's.
            return Principal(uid=f"admin.{uid}", claims=MappingProxyType({"sub": uid, "dev": True, "admin": True}))
        if prefix != "dev" or not sep or not _DEV_UID.fullmatch(uid):
            raise Unauthenticated(
                "Invalid dev token: expected 'Bearer dev:<uid>' with a uid of 1-128 characters [A-Za-z0-9_.@-] "
                "(not . or .., nor __name__)")
        return Principal(uid=uid, claims=MappingProxyType({"sub": uid, "dev": True}))


class _CertsUnavailable(Unavailable):
    code = "AUTH_UNAVAILABLE"


class _PublicCerts:
    """Google's public certificates ``{kid: pem}`` from one URL, cached per ``Cache-Control: max-age``.

    Thread-safe: one lock guards the cache and the fetch, so concurrent requests on an instance
    share one fetch. An unknown ``kid`` triggers a refetch at most once per minute (keys rotate
    rarely; a forged kid must not turn every request into a fetch). When a refresh fails while
    older certificates are held, those stay in use (logged) rather than failing every request.
    """

    def __init__(self, url: str, http: HttpRequest | None, clock: Callable[[], float]) -> None:
        self.url = url
        self._http = http
        self._clock = clock
        self._lock = threading.Lock()
        self._certs: dict[str, str] = {}
        self._expires_at = 0.0
        self._last_attempt: float | None = None
        self.fetch_count = 0

    def get(self, kid: str) -> str | None:
        with self._lock:
            now = self._clock()
            expired = now >= self._expires_at
            may_refetch = self._last_attempt is None or now - self._last_attempt >= UNKNOWN_KID_REFETCH_S
            if expired or (kid not in self._certs and may_refetch):
                self._refresh(now)
            return self._certs.get(kid)

    def _refresh(self, now: float) -> None:
        self._last_attempt = now
        try:
            certs, ttl = self._fetch()
        except _CertsUnavailable:
            if not self._certs:
                raise
            _log.warning("Refreshing public certificates from %s failed; keeping the cached ones", self.url,
                         exc_info=True)
            self._expires_at = now + DEFAULT_CERTS_TTL_S
            return
        self._certs = certs
        self._expires_at = now + ttl

    def _fetch(self) -> tuple[dict[str, str], float]:
        if self._http is None:
            import google.auth.transport.requests

            self._http = google.auth.transport.requests.Request()
        self.fetch_count += 1
        try:
            response = self._http(self.url, method="GET", timeout=10)
        except Exception as exc:  # any transport failure means the same to the caller
            raise _CertsUnavailable(f"Could not fetch the token certificates: {exc}") from exc
        if response.status != 200:
            raise _CertsUnavailable(f"Could not fetch the token certificates: HTTP {response.status}")
        try:
            data = json.loads(response.data)
        except ValueError as exc:
            raise _CertsUnavailable("The token certificates response is not JSON") from exc
        if not isinstance(data, dict) or not data or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
            raise _CertsUnavailable("The token certificates response is not a {kid: pem} object")
        ttl = DEFAULT_CERTS_TTL_S
        cache_control = _header(dict(response.headers), "Cache-Control") or ""
        match = _MAX_AGE.search(cache_control)
        if match:
            ttl = min(float(match.group(1)), 24 * 3600.0)
        return data, ttl


def _b64_json(segment: str) -> Any:
    return json.loads(b64decode_any(segment))


class FirebaseAuthenticator:
    """Verifies Firebase ID tokens (Bearer) and session cookies (``__session``) for ``project_id``.

    ``http`` is a google-auth transport (``google.auth.transport.Request``) used to fetch the public
    certificates; ``clock`` (monotonic seconds) only drives the certificate cache. Tests point the
    certificate URLs at a local server (see ``tests/fakes/firebase_keys.py``).
    """

    def __init__(self, project_id: str, *, id_token_certs_url: str = ID_TOKEN_CERTS_URL,
                 session_certs_url: str = SESSION_COOKIE_CERTS_URL, http: HttpRequest | None = None,
                 clock: Callable[[], float] = time.monotonic, service_accounts: tuple[str, ...] = (),
                 service_account_audience: str = "", google_certs_url: str = GOOGLE_CERTS_URL) -> None:
        if not project_id:
            raise ConfigurationError("FirebaseAuthenticator needs a Firebase project id (FIREBASE_PROJECT_ID)")
        if service_accounts and not service_account_audience:
            raise ConfigurationError("ADMIN_SERVICE_ACCOUNTS needs ADMIN_AUDIENCE (the audience of their ID tokens)")
        self.project_id = project_id
        self.service_accounts = tuple(a.lower() for a in service_accounts)
        self.service_account_audience = service_account_audience
        self._certs: dict[TokenKind, _PublicCerts] = {
            "id_token": _PublicCerts(id_token_certs_url, http, clock),
            "session_cookie": _PublicCerts(session_certs_url, http, clock),
            "google_id_token": _PublicCerts(google_certs_url, http, clock),
        }
        self._issuers: dict[TokenKind, str] = {
            "id_token": f"https://securetoken.google.com/{project_id}",
            "session_cookie": f"https://session.firebase.google.com/{project_id}",
        }

    def authenticate(self, headers: Mapping[str, str], cookies: Mapping[str, str]) -> Principal:
        token = _bearer(headers)
        if token is not None:
            if self.service_accounts and _unverified_issuer(token) in GOOGLE_ISSUERS:
                return self.verify_service_account(token)
            return self.verify(token, "id_token")
        cookie = cookies.get(SESSION_COOKIE_NAME)
        if cookie:
            return self.verify(cookie, "session_cookie")
        raise Unauthenticated(
            f"Missing credentials: send 'Authorization: Bearer <Firebase ID token>' or a '{SESSION_COOKIE_NAME}' "
            "session cookie")

    def verify_service_account(self, token: str) -> Principal:
        """A Google-signed ID token of one of the admin service accounts (audience ``ADMIN_AUDIENCE``):
        its principal has ``uid`` ``sa.<email>`` and ``service_account`` = the email."""
        def invalid(reason: str) -> Unauthenticated:
            return Unauthenticated(f"Invalid service account ID token: {reason}")

        claims = self._signed_claims(token, "google_id_token", self.service_account_audience, invalid)
        if claims.get("iss") not in GOOGLE_ISSUERS:
            raise invalid(f"wrong issuer {claims.get('iss')!r}")
        email = claims.get("email")
        if not isinstance(email, str) or claims.get("email_verified") is not True:
            raise invalid("no verified email (mint the token with the email claim included)")
        if email.lower() not in self.service_accounts:
            raise invalid(f"{email} is not an admin service account of this deployment")
        return Principal(uid=f"sa.{email.lower()}", email=email.lower(), claims=MappingProxyType(claims),
                         service_account=email.lower())

    def verify(self, token: str, kind: TokenKind) -> Principal:
        """Verify one token of ``kind`` and return its principal (``uid`` = ``sub``)."""
        what = "Firebase ID token" if kind == "id_token" else "Firebase session cookie"

        def invalid(reason: str) -> Unauthenticated:
            return Unauthenticated(f"Invalid {what}: {reason}")

        claims = self._signed_claims(token, kind, self.project_id, invalid)
        if claims.get("iss") != self._issuers[kind]:
            raise invalid(f"wrong issuer {claims.get('iss')!r}, expected {self._issuers[kind]!r}")
        sub = claims.get("sub")
        if not isinstance(sub, str) or not sub or len(sub) > 128:
            raise invalid("the subject (sub) must be a non-empty string of at most 128 characters")
        auth_time = claims.get("auth_time")
        if isinstance(auth_time, bool) or not isinstance(auth_time, int | float):
            raise invalid("missing auth_time")
        if auth_time > time.time() + CLOCK_SKEW_S:
            raise invalid("auth_time is in the future")
        email = claims.get("email")
        return Principal(uid=sub, email=email if isinstance(email, str) else None,
                         claims=MappingProxyType(claims))

    def _signed_claims(self, token: str, kind: TokenKind, audience: str,
                       invalid: Callable[[str], Unauthenticated]) -> dict[str, Any]:
        """The claims of an RS256 JWT signed by a key of ``kind``'s certificates, for ``audience``."""
        if len(token) > MAX_TOKEN_CHARS or token.count(".") != 2:
            raise invalid("not a JWT")
        try:
            header = _b64_json(token.split(".", 1)[0])
        except (ValueError, binascii.Error, UnicodeError) as exc:
            raise invalid("malformed header") from exc
        if not isinstance(header, dict):
            raise invalid("malformed header")
        # Pin the algorithm before google-auth sees the token: it would accept ES256 too, and
        # "none"/HS256 forgeries must fail here with a clear reason.
        if header.get("alg") != "RS256":
            raise invalid(f"algorithm must be RS256, got {header.get('alg')!r}")
        kid = header.get("kid")
        if not isinstance(kid, str) or not kid:
            raise invalid("no key id (kid) in the header")
        pem = self._certs[kind].get(kid)
        if pem is None:
            raise invalid(f"unknown key id {kid!r}")
        return self._decode(token, pem, kid, audience, invalid)

    @staticmethod
    def _decode(token: str, pem: str, kid: str, audience: str,
                invalid: Callable[[str], Unauthenticated]) -> dict[str, Any]:
        from google.auth import exceptions, jwt

        try:
            claims = jwt.decode(  # type: ignore[no-untyped-call]
                token, certs={kid: pem}, verify=True, audience=audience, clock_skew_in_seconds=CLOCK_SKEW_S)
        except (exceptions.GoogleAuthError, ValueError, TypeError) as exc:
            # google-auth's messages name the failed check (signature, expiry, audience).
            raise invalid(str(exc)) from exc
        if not isinstance(claims, dict):
            raise invalid("the payload is not a JSON object")
        return claims


def _unverified_issuer(token: str) -> object:
    """The ``iss`` of a JWT's payload, unverified: only which verification applies is chosen by it."""
    try:
        payload = _b64_json(token.split(".")[1]) if token.count(".") == 2 and len(token) <= MAX_TOKEN_CHARS else None
    except (ValueError, binascii.Error, UnicodeError):
        return None
    return payload.get("iss") if isinstance(payload, dict) else None


def create_authenticator(settings: Settings) -> Authenticator:
    """The authenticator ``settings.auth_mode`` asks for; local mode is refused on Cloud Run."""
    if settings.auth_mode == "local":
        if settings.on_cloud_run or os.environ.get("K_SERVICE"):
            raise ConfigurationError("AUTH_MODE=local is refused on Cloud Run; use AUTH_MODE=firebase")
        return LocalAuthenticator()
    if settings.auth_mode == "firebase":
        return FirebaseAuthenticator(
            settings.firebase_project_id or settings.google_cloud_project,
            id_token_certs_url=settings.firebase_certs_url or ID_TOKEN_CERTS_URL,
            session_certs_url=settings.firebase_session_certs_url or SESSION_COOKIE_CERTS_URL,
            service_accounts=settings.admin_service_accounts, service_account_audience=settings.admin_audience,
            google_certs_url=settings.google_certs_url or GOOGLE_CERTS_URL,
        )
    raise ConfigurationError(f"AUTH_MODE must be local or firebase, got {settings.auth_mode!r}")
