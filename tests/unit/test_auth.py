"""shared.auth: real signature checks against certificates served by a local HTTP server."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shared.auth import (
    FirebaseAuthenticator,
    LocalAuthenticator,
    Principal,
    create_authenticator,
)
from shared.config import Settings
from shared.errors import ConfigurationError, Unauthenticated, Unavailable
from shared.web import http_status
from tests.fakes.firebase_keys import ID_TOKEN_PATH, SESSION_PATH, FirebaseKeys, SigningKey

PROJECT = "demo-auth-test"
REPO = Path(__file__).resolve().parents[2]


class Clock:
    """Monotonic seconds for the certificate cache, advanced by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def keys() -> Iterator[FirebaseKeys]:
    with FirebaseKeys(PROJECT, max_age=300) as k:
        yield k


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def auth(keys: FirebaseKeys, clock: Clock) -> FirebaseAuthenticator:
    return FirebaseAuthenticator(PROJECT, id_token_certs_url=keys.id_token_certs_url,
                                 session_certs_url=keys.session_certs_url, clock=clock)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def rejected(auth: FirebaseAuthenticator, headers: dict[str, str] | None = None,
             cookies: dict[str, str] | None = None) -> str:
    with pytest.raises(Unauthenticated) as info:
        auth.authenticate(headers or {}, cookies or {})
    assert http_status(info.value)[0] == 401
    return info.value.message


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def forge(header: dict[str, Any], claims: dict[str, Any], signature: bytes = b"") -> str:
    return f"{b64(json.dumps(header).encode())}.{b64(json.dumps(claims).encode())}.{b64(signature)}"


def id_claims(keys: FirebaseKeys, uid: str = "alice") -> dict[str, Any]:
    return keys.claims(uid, f"https://securetoken.google.com/{PROJECT}")


# -- accepted ----------------------------------------------------------------------------------

def test_valid_id_token(auth: FirebaseAuthenticator, keys: FirebaseKeys) -> None:
    principal = auth.authenticate(bearer(keys.id_token("alice", email="alice@example.com")), {})
    assert isinstance(principal, Principal)
    assert principal.uid == "alice"
    assert principal.email == "alice@example.com"
    assert principal.claims["iss"] == f"https://securetoken.google.com/{PROJECT}"
    assert principal.claims["firebase"]["sign_in_provider"] == "custom"


def test_header_names_are_case_insensitive(auth: FirebaseAuthenticator, keys: FirebaseKeys) -> None:
    assert auth.authenticate({"authorization": f"bearer {keys.id_token('carol')}"}, {}).uid == "carol"


def test_valid_session_cookie(auth: FirebaseAuthenticator, keys: FirebaseKeys) -> None:
    principal = auth.authenticate({}, {"__session": keys.session_cookie("bob")})
    assert principal.uid == "bob"
    assert principal.email is None
    assert principal.claims["iss"] == f"https://session.firebase.google.com/{PROJECT}"


def test_subject_of_128_characters_is_accepted(auth: FirebaseAuthenticator, keys: FirebaseKeys) -> None:
    uid = "u" * 128
    assert auth.authenticate(bearer(keys.id_token(uid)), {}).uid == uid


# -- rejected claims -----------------------------------------------------------------------------

def test_expired_token(auth: FirebaseAuthenticator, keys: FirebaseKeys) -> None:
    now = int(time.time())
    token = keys.id_token("alice", iat=now - 7200, exp=now - 3600, auth_time=now - 7200)
    assert "expired" in rejected(auth, bearer(token)).lower()


def test_token_issued_in_the_future(auth: FirebaseAuthenticator, keys: FirebaseKeys) -> None:
    now = int(time.time())
    token = keys.id_token("alice", iat=now + 3600, exp=now + 7200)
    assert "too early" in rejected(auth, bearer(token)).lower()


def test_wrong_audience(auth: FirebaseAuthenticator, keys: FirebaseKeys) -> None:
    assert "audience" in rejected(auth, bearer(keys.id_token("alice", aud="another-project")))


def test_wrong_issuer_project(auth: FirebaseAuthenticator, keys: FirebaseKeys) -> None:
    token = keys.id_token("alice", iss="https://securetoken.google.com/another-project")
    assert "wrong issuer" in rejected(auth, bearer(token))


def test_id_token_presented_as_session_cookie(auth: FirebaseAuthenticator, keys: FirebaseKeys) -> None:
    message = rejected(auth, cookies={"__session": keys.id_token("alice")})
    assert message.startswith("Invalid Firebase session cookie: wrong issuer")


def test_session_cookie_presented_as_id_token(auth: FirebaseAuthenticator, keys: FirebaseKeys) -> None:
    message = rejected(auth, bearer(keys.session_cookie("alice")))
    assert message.startswith("Invalid Firebase ID token: wrong issuer")


@pytest.mark.parametrize("sub", ["", "u" * 129, 42, None])
def test_empty_oversized_or_non_string_subject(auth: FirebaseAuthenticator, keys: FirebaseKeys, sub: Any) -> None:
    token = keys.id_token("alice", sub=sub)
    assert "sub" in rejected(auth, bearer(token))


def test_missing_subject(auth: FirebaseAuthenticator, keys: FirebaseKeys) -> None:
    assert "sub" in rejected(auth, bearer(keys.id_token("alice", without=("sub",))))


def test_missing_or_future_auth_time(auth: FirebaseAuthenticator, keys: FirebaseKeys) -> None:
    assert "auth_time" in rejected(auth, bearer(keys.id_token("alice", without=("auth_time",))))
    future = keys.id_token("alice", auth_time=int(time.time()) + 3600)
    assert "auth_time is in the future" in rejected(auth, bearer(future))


def test_missing_exp(auth: FirebaseAuthenticator, keys: FirebaseKeys) -> None:
    assert "exp" in rejected(auth, bearer(keys.id_token("alice", without=("exp",))))


# -- rejected signatures -------------------------------------------------------------------------

def test_signature_by_another_key_under_a_published_kid(auth: FirebaseAuthenticator, keys: FirebaseKeys) -> None:
    impostor = SigningKey.generate(kid=keys.key.kid)
    token = keys.id_token("alice", key=impostor)
    assert "signature" in rejected(auth, bearer(token))


def test_unknown_kid(auth: FirebaseAuthenticator, keys: FirebaseKeys) -> None:
    rogue = keys.new_key(publish=False)
    assert f"unknown key id {rogue.kid!r}" in rejected(auth, bearer(keys.id_token("alice", key=rogue)))


def test_tampered_payload(auth: FirebaseAuthenticator, keys: FirebaseKeys) -> None:
    header, _, signature = keys.id_token("alice").split(".")
    payload = b64(json.dumps(id_claims(keys, "mallory")).encode())
    assert "signature" in rejected(auth, bearer(f"{header}.{payload}.{signature}"))


def test_alg_none_forgery(auth: FirebaseAuthenticator, keys: FirebaseKeys) -> None:
    token = forge({"alg": "none", "typ": "JWT", "kid": keys.key.kid}, id_claims(keys))
    assert "algorithm must be RS256" in rejected(auth, bearer(token))


def test_hs256_forgery_keyed_with_the_public_certificate(auth: FirebaseAuthenticator, keys: FirebaseKeys) -> None:
    header = {"alg": "HS256", "typ": "JWT", "kid": keys.key.kid}
    unsigned = forge(header, id_claims(keys)).rsplit(".", 1)[0]
    mac = hmac.new(keys.key.cert_pem.encode(), unsigned.encode(), hashlib.sha256).digest()
    assert "algorithm must be RS256" in rejected(auth, bearer(f"{unsigned}.{b64(mac)}"))


def test_missing_kid(auth: FirebaseAuthenticator, keys: FirebaseKeys) -> None:
    _, payload, signature = keys.id_token("alice").split(".")
    no_kid = b64(json.dumps({"alg": "RS256", "typ": "JWT"}).encode())
    assert "kid" in rejected(auth, bearer(f"{no_kid}.{payload}.{signature}"))


@pytest.mark.parametrize("token", [
    "not-a-jwt", "a.b", "a.b.c.d", "!!!.???.###", "e30.e30", "W10.e30.", "x" * 20000 + ".a.b",
])
def test_malformed_token(auth: FirebaseAuthenticator, token: str) -> None:
    assert rejected(auth, bearer(token)).startswith("Invalid Firebase ID token")


def test_malformed_payload_with_valid_header(auth: FirebaseAuthenticator, keys: FirebaseKeys) -> None:
    header = keys.id_token("alice").split(".")[0]
    assert rejected(auth, bearer(f"{header}.!!notbase64!!.AAAA")).startswith("Invalid Firebase ID token")


# -- which credential is read --------------------------------------------------------------------

def test_missing_credentials(auth: FirebaseAuthenticator) -> None:
    message = rejected(auth, {"Accept": "application/json"}, {"other": "cookie"})
    assert "Missing credentials" in message and "__session" in message


@pytest.mark.parametrize("value", ["Basic YWxpY2U6cHc=", "Bearer", "Bearer   ", "Token abc"])
def test_authorization_header_must_be_bearer(auth: FirebaseAuthenticator, value: str) -> None:
    assert "Bearer" in rejected(auth, {"Authorization": value})


def test_authorization_header_decides_over_the_cookie(auth: FirebaseAuthenticator, keys: FirebaseKeys) -> None:
    rejected(auth, bearer("garbage"), {"__session": keys.session_cookie("bob")})


# -- certificate cache ---------------------------------------------------------------------------

def test_certificates_are_cached_for_max_age(keys: FirebaseKeys, clock: Clock) -> None:
    auth = FirebaseAuthenticator(PROJECT, id_token_certs_url=keys.id_token_certs_url,
                                 session_certs_url=keys.session_certs_url, clock=clock)
    before_id, before_session = keys.fetches[ID_TOKEN_PATH], keys.fetches[SESSION_PATH]
    for _ in range(5):
        auth.authenticate(bearer(keys.id_token("alice")), {})
        auth.authenticate({}, {"__session": keys.session_cookie("alice")})
    assert keys.fetches[ID_TOKEN_PATH] - before_id == 1
    assert keys.fetches[SESSION_PATH] - before_session == 1
    clock.now += 299  # max_age is 300
    auth.authenticate(bearer(keys.id_token("alice")), {})
    assert keys.fetches[ID_TOKEN_PATH] - before_id == 1
    clock.now += 1
    auth.authenticate(bearer(keys.id_token("alice")), {})
    assert keys.fetches[ID_TOKEN_PATH] - before_id == 2


def test_concurrent_first_requests_share_one_fetch(keys: FirebaseKeys, clock: Clock) -> None:
    auth = FirebaseAuthenticator(PROJECT, id_token_certs_url=keys.id_token_certs_url,
                                 session_certs_url=keys.session_certs_url, clock=clock)
    before = keys.fetches[ID_TOKEN_PATH]
    tokens = [keys.id_token(f"user-{i}") for i in range(8)]
    barrier = threading.Barrier(len(tokens))
    uids: list[str] = []

    def call(token: str) -> None:
        barrier.wait(timeout=30)
        uids.append(auth.authenticate(bearer(token), {}).uid)

    threads = [threading.Thread(target=call, args=(token,)) for token in tokens]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(uids) == sorted(f"user-{i}" for i in range(8))
    assert keys.fetches[ID_TOKEN_PATH] - before == 1


def test_unknown_kid_refetches_at_most_once_a_minute(keys: FirebaseKeys, clock: Clock) -> None:
    auth = FirebaseAuthenticator(PROJECT, id_token_certs_url=keys.id_token_certs_url,
                                 session_certs_url=keys.session_certs_url, clock=clock)
    auth.authenticate(bearer(keys.id_token("alice")), {})
    fetched = keys.fetches[ID_TOKEN_PATH]
    rotated = keys.new_key()  # published after this authenticator's fetch
    token = keys.id_token("alice", key=rotated)
    for _ in range(3):
        assert "unknown key id" in rejected(auth, bearer(token))
    assert keys.fetches[ID_TOKEN_PATH] == fetched
    clock.now += 60
    assert auth.authenticate(bearer(token), {}).uid == "alice"
    assert keys.fetches[ID_TOKEN_PATH] == fetched + 1
    rogue = keys.id_token("alice", key=keys.new_key(publish=False))
    for _ in range(3):
        rejected(auth, bearer(rogue))
    assert keys.fetches[ID_TOKEN_PATH] == fetched + 1


def _closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/certs"


def test_unreachable_certificates_are_a_503_not_a_401(keys: FirebaseKeys) -> None:
    auth = FirebaseAuthenticator(PROJECT, id_token_certs_url=_closed_port_url())
    with pytest.raises(Unavailable) as info:
        auth.authenticate(bearer(keys.id_token("alice")), {})
    assert http_status(info.value)[0] == 503 and not isinstance(info.value, Unauthenticated)
    assert "certificates" in info.value.message


def test_cached_certificates_outlive_a_failed_refresh(clock: Clock) -> None:
    with FirebaseKeys(PROJECT, max_age=10) as own:
        auth = FirebaseAuthenticator(PROJECT, id_token_certs_url=own.id_token_certs_url, clock=clock)
        assert auth.authenticate(bearer(own.id_token("alice")), {}).uid == "alice"
    clock.now += 11  # expired, and the server is gone
    assert auth.authenticate(bearer(own.id_token("alice")), {}).uid == "alice"


# -- factory and local mode ----------------------------------------------------------------------

def test_create_authenticator_firebase_uses_the_configured_urls(keys: FirebaseKeys) -> None:
    auth = create_authenticator(Settings(**keys.settings_overrides()))
    assert isinstance(auth, FirebaseAuthenticator)
    assert auth.authenticate(bearer(keys.id_token("alice")), {}).uid == "alice"
    assert auth.authenticate({}, {"__session": keys.session_cookie("bob")}).uid == "bob"


def test_create_authenticator_local(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("K_SERVICE", raising=False)
    assert isinstance(create_authenticator(Settings(auth_mode="local")), LocalAuthenticator)


def test_create_authenticator_refuses_local_mode_on_cloud_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("K_SERVICE", raising=False)
    with pytest.raises(ConfigurationError, match="Cloud Run"):
        create_authenticator(Settings(auth_mode="local", on_cloud_run=True))
    monkeypatch.setenv("K_SERVICE", "run")
    with pytest.raises(ConfigurationError, match="Cloud Run"):
        create_authenticator(Settings(auth_mode="local"))


def test_local_dev_token_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("K_SERVICE", raising=False)
    principal = LocalAuthenticator().authenticate({"Authorization": "Bearer dev:alice.b-c_d@example.com"}, {})
    assert principal.uid == "alice.b-c_d@example.com"
    assert principal.claims["dev"] is True


@pytest.mark.parametrize("value", [
    "Bearer dev:", "Bearer dev:a b", "Bearer dev:al/ice", "Bearer devx:alice", "Bearer alice",
    "Bearer dev:" + "a" * 129, "Basic dev:alice", "Bearer dev:alice bob",
])
def test_malformed_dev_token_rejected(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.delenv("K_SERVICE", raising=False)
    with pytest.raises(Unauthenticated):
        LocalAuthenticator().authenticate({"Authorization": value}, {})


def test_local_mode_without_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("K_SERVICE", raising=False)
    with pytest.raises(Unauthenticated, match="dev:<uid>"):
        LocalAuthenticator().authenticate({}, {"other": "dev:alice"})


def test_local_mode_reads_the_session_cookie_without_a_header(monkeypatch: pytest.MonkeyPatch) -> None:
    """A browser's EventSource cannot set Authorization: it is authenticated by the cookie, as a
    Firebase session cookie is in production; the header, when present, alone decides."""
    monkeypatch.delenv("K_SERVICE", raising=False)
    assert LocalAuthenticator().authenticate({}, {"__session": "dev:alice"}).uid == "alice"
    both = LocalAuthenticator().authenticate({"Authorization": "Bearer dev:bob"}, {"__session": "dev:alice"})
    assert both.uid == "bob"
    for bad in ("alice", "dev:", "dev:a/b"):
        with pytest.raises(Unauthenticated):
            LocalAuthenticator().authenticate({}, {"__session": bad})


def test_a_dev_uid_is_a_document_id_in_both_stores(monkeypatch: pytest.MonkeyPatch) -> None:
    """Firestore refuses the document ids ``.`` and ``..`` and reserves ``__...__``: a dev token
    naming one is refused (401) rather than every write of that user failing with a 500."""
    monkeypatch.delenv("K_SERVICE", raising=False)
    for bad in ("dev:.", "dev:..", "dev:__x__", "dev:____"):
        with pytest.raises(Unauthenticated, match=r"not \. or \.\."):
            LocalAuthenticator().authenticate({"Authorization": f"Bearer {bad}"}, {})
    for good in ("...", ".a", "a..", "__x", "x__", "_a_"):
        assert LocalAuthenticator().authenticate({"Authorization": f"Bearer dev:{good}"}, {}).uid == good


def test_local_authenticator_refuses_cloud_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("K_SERVICE", "agent-run")
    with pytest.raises(ConfigurationError, match="K_SERVICE"):
        LocalAuthenticator()


def test_local_mode_does_not_import_google_auth() -> None:
    code = (
        "import sys\n"
        "from shared.auth import LocalAuthenticator\n"
        "assert LocalAuthenticator().authenticate({'Authorization': 'Bearer dev:a'}, {}).uid == 'a'\n"
        "heavy = ('google.auth', 'google.oauth2', 'cryptography', 'requests')\n"
        "loaded = sorted(m for m in sys.modules if m.startswith(heavy))\n"
        "assert not loaded, loaded\n"
    )
    env = {"PATH": "/usr/bin:/bin"}
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 0, result.stderr
