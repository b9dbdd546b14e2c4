"""Fetching a public web page as readable text, safely: the adapter behind ``web_fetch``.

The only module that imports ``html2text`` (HTML → Markdown-flavoured text: headings, lists, code
blocks and links survive, scripts and styles are dropped). HTTP goes through ``urllib3``.

**SSRF protection.** A URL chosen by a model must not reach the function's own network: the cloud
metadata server (which hands out the service account's tokens), the VPC, or loopback services.

- Only ``http`` and ``https``, no credentials in the URL, ports 80 and 443 only.
- Host names that name internal services are refused before any lookup (``metadata.google.internal``,
  ``*.internal``, ``localhost``, ``*.local`` ...).
- The host is resolved once and **every** address must be public (``ipaddress``: not private,
  loopback, link-local, multicast, reserved, unspecified, shared/CGNAT, and not a metadata address
  such as ``169.254.169.254`` or ``fd00:ec2::254``; IPv4-mapped, 6to4, Teredo and NAT64 IPv6
  addresses are judged by the IPv4 address inside them).
- The connection goes to the checked address itself (the host name is sent as ``Host`` and as TLS
  SNI, and the certificate is verified against it), so a second DNS answer cannot swap in a
  private address between the check and the connect (DNS rebinding).
- Redirects are followed by hand, at most 5 hops, and every hop is checked the same way.

Hosts in ``allow_hosts`` (``WEB_FETCH_ALLOW_HOSTS``: tests and local development only, refused on
Cloud Run) skip the address and port checks.

**Limits.** At most ``max_bytes`` (``WEB_FETCH_MAX_BYTES``, 2 MiB) of the (decompressed) body are
read, and the whole fetch, redirects included, gets ``timeout_s`` seconds (each socket read is bounded
by the time left).

```python
page = WebFetcher(max_bytes=2 << 20).fetch("https://example.org/docs", timeout_s=15)
page.title, page.text, page.final_url
```
"""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from html import unescape
from typing import Any, TypeVar
from urllib.parse import urljoin, urlsplit

import certifi
import html2text
import urllib3
from pydantic import BaseModel, Field
from urllib3.exceptions import HTTPError as Urllib3Error
from urllib3.exceptions import SSLError as Urllib3SSLError

from shared.connectors.addresses import address_problem
from shared.connectors.addresses import hostname_problem as _hostname_problem
from shared.connectors.addresses import literal as _literal
from shared.errors import ToolError

MAX_REDIRECTS = 5
DEFAULT_MAX_BYTES = 2 * 1024 * 1024
ALLOWED_PORTS = frozenset({80, 443})
USER_AGENT = "AgentRuntime-WebFetch/1.0 (+readable text for an AI agent)"
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_CHUNK = 64 * 1024
_TEXT_TYPES = ("text/", "application/json", "application/xml", "application/xhtml+xml", "application/ld+json",
               "application/javascript", "application/x-yaml", "application/yaml", "application/toml")
_HTML_TYPES = ("text/html", "application/xhtml+xml")

_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?([A-Za-z0-9_.:-]{1,40})""", re.IGNORECASE)

Resolver = Callable[[str, int], Iterable[str]]
_T = TypeVar("_T")



@dataclass(frozen=True)
class FetchedFile:
    final_url: str
    content_type: str
    """The media type the server named (lowercase, without parameters; ``""`` when none)."""
    body: bytes


class FetchedPage(BaseModel):
    url: str
    final_url: str
    status: int
    content_type: str
    title: str = ""
    text: str
    bytes_read: int
    truncated: bool = False
    """The body was larger than ``max_bytes``; only its start was read."""
    redirects: list[str] = Field(default_factory=list)


def _getaddrinfo(host: str, port: int) -> list[str]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise ToolError(f"web_fetch: the host {host!r} could not be resolved") from None
    return [str(info[4][0]) for info in infos]


def _charset(content_type: str, head: bytes) -> str | None:
    for param in content_type.split(";")[1:]:
        key, _, value = param.strip().partition("=")
        if key.lower() == "charset" and value.strip():
            return value.strip().strip('"')
    found = _META_CHARSET.search(head[:4096])
    return found.group(1).decode("ascii") if found else None


def decode(body: bytes, content_type: str) -> str:
    """The body as text: the declared charset (header, then ``<meta charset>``), else UTF-8, else cp1252."""
    declared = _charset(content_type, body)
    for candidate in (declared, "utf-8"):
        if not candidate:
            continue
        try:
            return body.decode(candidate)
        except (LookupError, UnicodeDecodeError):
            continue
    return body.decode("cp1252", errors="replace")


def html_to_text(html: str, base_url: str) -> tuple[str, str]:
    """The page's title and its text as Markdown (links resolved against ``base_url``, images dropped)."""
    found = _TITLE.search(html)
    title = " ".join(unescape(found.group(1)).split())[:300] if found else ""
    if found:  # returned on its own; a page without <head> would otherwise repeat it as body text
        html = html[:found.start()] + html[found.end():]
    converter = html2text.HTML2Text(baseurl=base_url, bodywidth=0)
    converter.ignore_images = True
    converter.skip_internal_links = True
    converter.single_line_break = False
    text = converter.handle(html)
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    return title, text


class WebFetcher:
    """Fetches one URL under the SSRF rules and limits of the module doc.

    Args:
        allow_hosts: Hosts exempt from the address and port checks (tests and local development).
        max_bytes: Body bytes read at most (after decompression).
        resolver: ``(host, port) -> addresses`` (default ``socket.getaddrinfo``; tests pass a table).
        ca_certs: CA bundle for HTTPS (default certifi's; tests pass their own CA).
        max_redirects: Redirect hops followed at most.
    """

    def __init__(self, *, allow_hosts: Iterable[str] = (), max_bytes: int = DEFAULT_MAX_BYTES,
                 resolver: Resolver | None = None, ca_certs: str | None = None,
                 max_redirects: int = MAX_REDIRECTS) -> None:
        self._allow = frozenset(h.lower().strip("[]").rstrip(".") for h in allow_hosts)
        self._max_bytes = max(1, max_bytes)
        self._resolve: Resolver = resolver or _getaddrinfo
        self._ca_certs = ca_certs or certifi.where()
        self._max_redirects = max_redirects

    # ---- checks --------------------------------------------------------------------------------------
    def check(self, url: str) -> tuple[str, str, int, list[str]]:
        """``(scheme, host, port, addresses)`` of ``url`` once every rule holds; ``ToolError`` naming
        the broken rule otherwise. No connection is made here."""
        try:
            parts = urlsplit(url.strip())
            port = parts.port
        except ValueError:
            raise ToolError(f"web_fetch: {url[:200]!r} is not a valid URL") from None
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https"):
            what = repr(scheme) if scheme else "a relative URL"
            raise ToolError(f"web_fetch: only http and https URLs can be fetched, not {what}")
        if parts.username is not None or parts.password is not None:
            raise ToolError("web_fetch: URLs with credentials (user:password@) are refused")
        host = (parts.hostname or "").rstrip(".").lower()
        if not host:
            raise ToolError(f"web_fetch: {url[:200]!r} has no host")
        port = port if port is not None else (443 if scheme == "https" else 80)
        allowed = host in self._allow
        if not allowed:
            if port not in ALLOWED_PORTS:
                raise ToolError(f"web_fetch: port {port} is refused; only 80 and 443 can be fetched")
            problem = _hostname_problem(host)
            if problem:
                raise ToolError(f"web_fetch refused {url[:200]!r}: {problem}")
        literal = _literal(host)
        try:
            host_idna = host if literal is not None else host.encode("idna").decode("ascii")
        except UnicodeError:
            raise ToolError(f"web_fetch: {host!r} is not a valid host name") from None
        addresses = [str(literal)] if literal is not None else list(dict.fromkeys(self._resolve(host_idna, port)))
        if not addresses:
            raise ToolError(f"web_fetch: the host {host!r} could not be resolved")
        if not allowed:
            for raw in addresses:
                ip = _literal(raw.split("%", 1)[0])
                problem = address_problem(ip) if ip is not None else f"{raw!r} is not an IP address"
                if problem:
                    raise ToolError(f"web_fetch refused {url[:200]!r}: {host} resolves to a non-public address "
                                    f"({problem})")
        return scheme, host_idna, port, addresses

    # ---- fetching ------------------------------------------------------------------------------------
    def fetch(self, url: str, *, timeout_s: float) -> FetchedPage:
        """GET ``url`` (following checked redirects) within ``timeout_s`` seconds in all."""
        return self._get(url, timeout_s, lambda final, response, redirects, deadline:
                         self._page(url, final, response, redirects, deadline))

    def fetch_file(self, url: str, *, timeout_s: float) -> FetchedFile:
        """GET ``url``'s bytes, whatever their type, under the same rules; a body larger than
        ``max_bytes`` is refused (a file is never cut)."""

        def read(final: str, response: Any, redirects: list[str], deadline: float) -> FetchedFile:
            status = int(response.status)
            if status >= 400:
                raise ToolError(f"{final[:200]!r} answered HTTP {status}")
            body, truncated = self._read(response, deadline, final)
            if truncated:
                raise ToolError(f"{final[:200]!r} is larger than {self._max_bytes} bytes")
            content_type = str(response.headers.get("content-type") or "").split(";", 1)[0].strip().lower()
            return FetchedFile(final_url=final, content_type=content_type, body=body)

        return self._get(url, timeout_s, read)

    def _get(self, url: str, timeout_s: float, read: Callable[[str, Any, list[str], float], _T]) -> _T:
        deadline = time.monotonic() + max(0.0, timeout_s)
        current = url.strip()
        redirects: list[str] = []
        for _ in range(self._max_redirects + 1):
            scheme, host, port, addresses = self.check(current)
            response = self._open(current, scheme, host, port, addresses, deadline)
            try:
                if response.status in _REDIRECTS and response.headers.get("location"):
                    target = urljoin(current, str(response.headers["location"]))
                    redirects.append(target)
                    current = target
                    continue
                return read(current, response, redirects, deadline)
            finally:
                response.release_conn()
                response.close()
        raise ToolError(f"web_fetch: more than {self._max_redirects} redirects from {url[:200]!r}")

    def _open(self, url: str, scheme: str, host: str, port: int, addresses: list[str], deadline: float) -> Any:
        parts = urlsplit(url)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        default_port = 443 if scheme == "https" else 80
        host_header = (f"[{host}]" if ":" in host else host) + ("" if port == default_port else f":{port}")
        headers = {"Host": host_header, "User-Agent": USER_AGENT, "Accept-Encoding": "gzip, deflate",
                   "Accept": "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.5"}
        last_error: Exception | None = None
        for address in addresses:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            timeout = urllib3.Timeout(connect=remaining, read=remaining)
            pool: urllib3.HTTPConnectionPool
            if scheme == "https":
                literal = _literal(host) is not None
                pool = urllib3.HTTPSConnectionPool(
                    address, port, timeout=timeout, retries=False, maxsize=1, cert_reqs="CERT_REQUIRED",
                    ca_certs=self._ca_certs, assert_hostname=host, server_hostname=None if literal else host)
            else:
                pool = urllib3.HTTPConnectionPool(address, port, timeout=timeout, retries=False, maxsize=1)
            try:
                return pool.urlopen("GET", target, headers=headers, redirect=False, preload_content=False,
                                    decode_content=True, assert_same_host=False, release_conn=False)
            except Urllib3SSLError:
                pool.close()
                raise ToolError(f"web_fetch: the TLS certificate of {host} could not be verified") from None
            except (Urllib3Error, OSError) as exc:
                pool.close()
                last_error = exc
        if last_error is None or time.monotonic() >= deadline:
            raise ToolError(f"web_fetch: {url[:200]!r} did not answer within the time limit")
        raise ToolError(f"web_fetch: {host} could not be reached ({type(last_error).__name__})")

    def _page(self, url: str, final: str, response: Any, redirects: list[str], deadline: float) -> FetchedPage:
        status = int(response.status)
        content_type = str(response.headers.get("content-type") or "").strip()
        mime = content_type.split(";", 1)[0].strip().lower()
        if status >= 400:
            raise ToolError(f"web_fetch: {final[:200]!r} answered HTTP {status}"
                            + (f" {response.reason}" if response.reason else ""))
        if mime and not mime.startswith(_TEXT_TYPES) and not mime.endswith(("+json", "+xml")):
            raise ToolError(f"web_fetch: {final[:200]!r} is not a text page ({mime}); only HTML and text can be read")
        body, truncated = self._read(response, deadline, final)
        text = decode(body, content_type)
        title = ""
        if mime in _HTML_TYPES or (not mime and text.lstrip()[:15].lower().startswith(("<!doctype html", "<html"))):
            title, text = html_to_text(text, final)
        return FetchedPage(url=url, final_url=final, status=status, content_type=mime or "unknown", title=title,
                           text=text, bytes_read=len(body), truncated=truncated, redirects=redirects)

    def _read(self, response: Any, deadline: float, url: str) -> tuple[bytes, bool]:
        declared = response.headers.get("content-length")
        truncated = bool(declared and declared.isdigit() and int(declared) > self._max_bytes)
        chunks: list[bytes] = []
        size = 0
        while size <= self._max_bytes:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ToolError(f"web_fetch: {url[:200]!r} was still sending after the time limit")
            sock = getattr(getattr(response, "connection", None), "sock", None)
            if sock is not None:
                sock.settimeout(remaining)  # no single read may outlive the caller's deadline
            try:
                # read1: one socket read at most (read() would wait for the whole amount, past the deadline).
                chunk = response.read1(min(_CHUNK, self._max_bytes + 1 - size))
            except (Urllib3Error, OSError) as exc:
                if time.monotonic() >= deadline or isinstance(exc, (TimeoutError, socket.timeout)):
                    raise ToolError(f"web_fetch: {url[:200]!r} was still sending after the time limit") from None
                raise ToolError(f"web_fetch: reading {url[:200]!r} failed ({type(exc).__name__})") from None
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        body = b"".join(chunks)
        if len(body) > self._max_bytes:
            body, truncated = body[:self._max_bytes], True
        return body, truncated
