"""Firebase's token side, locally: an RSA key, its public certificate served over HTTP, signed tokens.

The real ``FirebaseAuthenticator`` verifies these tokens exactly as it verifies Google's; only the
certificate URLs point at this server (``127.0.0.1``). Example::

    from tests.fakes.firebase_keys import FirebaseKeys

    with FirebaseKeys("demo-agent-runtime") as keys:
        settings = make_settings(**keys.settings_overrides())   # auth_mode="firebase", cert URLs
        token = keys.id_token("alice", email="alice@example.com")
        client.post("/api/agent/run", headers={"Authorization": f"Bearer {token}"}, json={...})
        client.set_cookie("__session", keys.session_cookie("bob"))

Claims are overridable (``keys.id_token("alice", exp=0)``) or removable (``without=("auth_time",)``);
``keys.new_key()`` makes another key, published or not (``publish=False`` for a forger's key).
"""

from __future__ import annotations

import datetime
import json
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID
from google.auth import crypt, jwt

from devfakes.loopback import LoopbackServer

ID_TOKEN_PATH = "/robot/v1/metadata/x509/securetoken@system.gserviceaccount.com"
SESSION_PATH = "/identitytoolkit/v3/relyingparty/publicKeys"
GOOGLE_PATH = "/oauth2/v1/certs"
"""Google's own ID-token certificates (service accounts' ID tokens, the admin principal)."""


@dataclass(frozen=True)
class SigningKey:
    """An RSA key pair: ``kid``, a signer for tokens and the self-signed certificate (PEM) to publish."""

    kid: str
    signer: crypt.RSASigner
    cert_pem: str

    @staticmethod
    def generate(kid: str | None = None) -> SigningKey:
        kid = kid or uuid.uuid4().hex
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "securetoken.system.gserviceaccount.com")])
        now = datetime.datetime.now(datetime.UTC)
        cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(days=1))
                .not_valid_after(now + datetime.timedelta(days=7))
                .sign(key, hashes.SHA256()))
        private_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                        serialization.NoEncryption())
        signer = crypt.RSASigner.from_string(private_pem, key_id=kid)  # type: ignore[no-untyped-call]
        return SigningKey(kid=kid, signer=signer,
                          cert_pem=cert.public_bytes(serialization.Encoding.PEM).decode("ascii"))


class FirebaseKeys(LoopbackServer):
    """Serves ``{kid: pem}`` for ID tokens and session cookies and mints tokens signed by ``key``.

    Both certificate URLs publish the same keys (so a token of one kind presented as the other fails
    on its issuer, as it should). ``fetches`` counts GETs per path; ``max_age`` is sent as
    ``Cache-Control: public, max-age=N``.
    """

    def __init__(self, project_id: str = "demo-agent-runtime", *, max_age: int = 3600) -> None:
        self.project_id = project_id
        self.max_age = max_age
        self.key = SigningKey.generate()
        self.fetches: Counter[str] = Counter()
        self._published: dict[str, str] = {self.key.kid: self.key.cert_pem}
        self._lock = threading.Lock()

    # -- server --------------------------------------------------------------------------------
    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                with owner._lock:
                    owner.fetches[self.path] += 1
                    body = json.dumps(owner._published).encode()
                if self.path not in (ID_TOKEN_PATH, SESSION_PATH, GOOGLE_PATH):
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/json; charset=UTF-8")
                self.send_header("Cache-Control", f"public, max-age={owner.max_age}, must-revalidate, no-transform")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
                pass

        return Handler

    def stop(self) -> None:
        self.close()

    @property
    def base_url(self) -> str:
        return self.root

    @property
    def id_token_certs_url(self) -> str:
        return self.base_url + ID_TOKEN_PATH

    @property
    def session_certs_url(self) -> str:
        return self.base_url + SESSION_PATH

    @property
    def google_certs_url(self) -> str:
        return self.base_url + GOOGLE_PATH

    def settings_overrides(self) -> dict[str, Any]:
        """Keyword arguments for ``shared.config.Settings`` that point firebase auth at this server."""
        return {"auth_mode": "firebase", "firebase_project_id": self.project_id,
                "firebase_certs_url": self.id_token_certs_url,
                "firebase_session_certs_url": self.session_certs_url, "google_certs_url": self.google_certs_url}

    # -- keys and tokens -----------------------------------------------------------------------
    def new_key(self, *, publish: bool = True) -> SigningKey:
        """Another key; published keys are served from the next certificate fetch on."""
        key = SigningKey.generate()
        if publish:
            with self._lock:
                self._published[key.kid] = key.cert_pem
        return key

    def claims(self, uid: str, issuer: str, *, without: Iterable[str] = (), **overrides: Any) -> dict[str, Any]:
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": issuer, "aud": self.project_id, "auth_time": now - 60, "user_id": uid, "sub": uid,
            "iat": now - 10, "exp": now + 3600, "firebase": {"identities": {}, "sign_in_provider": "custom"},
        }
        claims.update(overrides)
        for name in without:
            claims.pop(name, None)
        return claims

    def sign(self, claims: dict[str, Any], *, key: SigningKey | None = None) -> str:
        """Sign arbitrary ``claims`` with ``key`` (default: the published key) as an RS256 JWT."""
        token: bytes = jwt.encode((key or self.key).signer, claims)  # type: ignore[no-untyped-call]
        return token.decode("ascii")

    def id_token(self, uid: str, *, key: SigningKey | None = None, without: Iterable[str] = (),
                 **overrides: Any) -> str:
        """A Firebase ID token for ``uid`` (for ``Authorization: Bearer``)."""
        issuer = f"https://securetoken.google.com/{self.project_id}"
        return self.sign(self.claims(uid, issuer, without=without, **overrides), key=key)

    def service_account_token(self, email: str, audience: str, *, key: SigningKey | None = None,
                              **overrides: Any) -> str:
        """A Google-signed ID token of service account ``email`` for ``audience`` (as the IAM
        Credentials API's generateIdToken with includeEmail gives it)."""
        now = int(time.time())
        claims: dict[str, Any] = {"iss": "https://accounts.google.com", "aud": audience, "azp": "1234567890",
                                  "sub": "1234567890", "email": email, "email_verified": True,
                                  "iat": now - 10, "exp": now + 3600}
        claims.update(overrides)
        return self.sign(claims, key=key)

    def session_cookie(self, uid: str, *, key: SigningKey | None = None, without: Iterable[str] = (),
                       **overrides: Any) -> str:
        """A Firebase session cookie for ``uid`` (for the ``__session`` cookie)."""
        issuer = f"https://session.firebase.google.com/{self.project_id}"
        return self.sign(self.claims(uid, issuer, without=without, **overrides), key=key)
