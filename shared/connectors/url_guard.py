"""Where a user's MCP server URL may lead (docs/connectors.md, "MCP servers"): only to public
addresses, so a user cannot make the function reach its own network (loopback, private ranges,
link-local, the metadata server at 169.254.169.254, ...).

Host names naming internal services (``localhost``, ``*.internal``, ``metadata.google.internal``,
a name without a domain ...) are refused; the host is resolved and every address it resolves to
must be public: not loopback, private, link-local, a metadata address, multicast, reserved,
unspecified or shared (CGNAT); IPv4-mapped, 6to4, Teredo and NAT64 IPv6 addresses are judged by
the IPv4 address inside them (``shared/connectors/addresses.py``, shared with ``web_fetch``). It is
checked when the URL is stored (``POST /api/integrations/mcp/{name}``: 400 ``MCP_URL_NOT_ALLOWED``)
and again before every connection (the host may resolve elsewhere by then). ``MCP_ALLOW_PRIVATE_URLS``
turns it off (``make dev`` and the tests that start servers on 127.0.0.1). Deployment servers
(``MCP_SERVERS``) are the operator's choice and never checked.

Limit: the address is checked, then the SDK resolves the host again to connect; a DNS answer that
changes between the two (rebinding with a very short TTL) is not caught here. Egress controls on
the function (a VPC connector with firewall rules) close that gap.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from shared.connectors.addresses import address_problem, hostname_problem
from shared.errors import InvalidInput


class UrlNotAllowed(InvalidInput):
    """The URL's host is not a public address (or cannot be resolved)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code="MCP_URL_NOT_ALLOWED")


def check_public_url(url: str) -> None:
    """Raise :class:`UrlNotAllowed` unless every address ``url``'s host resolves to is public."""
    parts = urlsplit(url)
    host = parts.hostname
    if not host:
        raise UrlNotAllowed("the URL has no host")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise UrlNotAllowed("the URL's port is not a number between 0 and 65535") from None
    problem = hostname_problem(host)
    if problem is None:
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError):
            raise UrlNotAllowed(f"the host {host[:100]} does not resolve") from None
        addresses = sorted({str(info[4][0]).split("%", 1)[0] for info in infos})  # no IPv6 zone id
        problems = [address_problem(ipaddress.ip_address(a)) for a in addresses] or ["no address"]
        problem = next((p for p in problems if p is not None), None)
    if problem is not None:
        raise UrlNotAllowed(f"the URL's host is not public: {problem[:200]}. A user's MCP server must be at a "
                            "public address (MCP_ALLOW_PRIVATE_URLS allows others, for local development)")
