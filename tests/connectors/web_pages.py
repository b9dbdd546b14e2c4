"""A loopback web server for the ``web_fetch`` tests: scripted pages, redirects, big, slow,
compressed and binary answers, over HTTP or HTTPS (a certificate from a throwaway test CA).

Example::

    with PageServer() as web:
        web.page("/doc", "<html><title>Doc</title><p>Hi</p></html>")
        web.redirect("/old", "/doc")
        fetcher.fetch(web.url("/old"), timeout_s=5)
        assert web.hits == ["/old", "/doc"]
"""

from __future__ import annotations

import datetime as dt
import gzip
import ipaddress
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


@dataclass
class Answer:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    drip_s: float = 0.0
    """Send the body one byte at a time, this long apart (a slow server)."""


Route = Callable[[], Answer]


@dataclass
class Seen:
    path: str
    headers: dict[str, str]


def make_ca_and_cert(directory: Path, names: list[str]) -> tuple[Path, Path, Path]:
    """A throwaway CA and a server certificate for ``names`` (DNS names or IP addresses) signed by
    it: ``(ca.pem, cert.pem, key.pem)``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "web_fetch test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
          .not_valid_after(now + dt.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    alt: list[x509.GeneralName] = []
    for name in names:
        try:
            alt.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            alt.append(x509.DNSName(name))
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(alt), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    ca_path, cert_path, key_path = directory / "ca.pem", directory / "cert.pem", directory / "key.pem"
    ca_path.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return ca_path, cert_path, key_path


class PageServer:
    """The server; ``tls=(cert.pem, key.pem)`` serves HTTPS."""

    def __init__(self, *, tls: tuple[Path, Path] | None = None) -> None:
        self.routes: dict[str, Route] = {}
        self.hits: list[str] = []
        self.seen: list[Seen] = []
        self._tls = tls
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._closing = threading.Event()

    def __enter__(self) -> PageServer:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_class(self))
        if self._tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(str(self._tls[0]), str(self._tls[1]))
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02},
                                        name="web-pages", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join()

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.server_address[1])

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        scheme = "https" if self._tls else "http"
        return f"{scheme}://{host}:{self.port}{path}"

    # scripting -----------------------------------------------------------------------------
    def add(self, path: str, answer: Answer) -> None:
        self.routes[path] = lambda: answer

    def page(self, path: str, html: str, *, content_type: str = "text/html; charset=utf-8") -> None:
        self.add(path, Answer(body=html.encode("utf-8"), headers={"Content-Type": content_type}))

    def raw(self, path: str, body: bytes, content_type: str, **headers: str) -> None:
        self.add(path, Answer(body=body, headers={"Content-Type": content_type, **headers}))

    def gzipped(self, path: str, text: str) -> None:
        self.add(path, Answer(body=gzip.compress(text.encode()), headers={
            "Content-Type": "text/plain; charset=utf-8", "Content-Encoding": "gzip"}))

    def redirect(self, path: str, location: str, status: int = 302) -> None:
        self.add(path, Answer(status=status, headers={"Location": location}))

    def slow(self, path: str, size: int, every_s: float) -> None:
        self.add(path, Answer(body=b"x" * size, headers={"Content-Type": "text/plain"}, drip_s=every_s))


def _handler_class(server: PageServer) -> type[BaseHTTPRequestHandler]:
    class _Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = 30

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            server.hits.append(self.path)
            server.seen.append(Seen(self.path, {k.lower(): v for k, v in self.headers.items()}))
            route = server.routes.get(self.path.split("?", 1)[0])
            answer = route() if route is not None else Answer(404, b"not found", {"Content-Type": "text/plain"})
            self.send_response(answer.status)
            for name, value in answer.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(answer.body)))
            self.end_headers()
            try:
                if answer.drip_s:
                    for i in range(len(answer.body)):
                        if server._closing.wait(answer.drip_s):
                            return
                        self.wfile.write(answer.body[i:i + 1])
                        self.wfile.flush()
                else:
                    self.wfile.write(answer.body)
            except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
                self.close_connection = True  # the client gave up (its time limit): nothing to tell

    return _Handler

