"""Which addresses and host names are public: shared by ``web_fetch``'s SSRF protection
(``shared/connectors/web.py``) and the guard on users' MCP server URLs
(``shared/connectors/url_guard.py``). Standard library only (cheap to import)."""

from __future__ import annotations

import ipaddress

BLOCKED_HOSTNAMES = frozenset({
    "localhost", "metadata", "metadata.google.internal", "metadata.goog", "instance-data",
    "instance-data.ec2.internal", "metadata.azure.com", "kubernetes.default", "kubernetes.default.svc",
})
BLOCKED_SUFFIXES = (".localhost", ".internal", ".local", ".localdomain", ".home.arpa", ".svc", ".cluster.local")
METADATA_ADDRESSES = frozenset(ipaddress.ip_address(a) for a in (
    "169.254.169.254",  # GCP, AWS, Azure, OpenStack
    "169.254.170.2",  # AWS ECS task metadata
    "169.254.169.253",  # AWS DNS
    "100.100.100.200",  # Alibaba Cloud
    "192.0.0.192",  # Oracle Cloud
    "fd00:ec2::254",  # AWS IMDS over IPv6
    "fd00:ec2::253",
))
_NAT64 = ipaddress.ip_network("64:ff9b::/96")

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def address_problem(ip: IpAddress) -> str | None:
    """Why ``ip`` must not be fetched from (``None``: a public address)."""
    if isinstance(ip, ipaddress.IPv6Address):
        inner = ip.ipv4_mapped or ip.sixtofour or (ip.teredo[1] if ip.teredo else None)
        if inner is None and ip in _NAT64:
            inner = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if inner is not None:
            problem = address_problem(inner)
            return f"{problem} (inside {ip})" if problem else None
    if ip in METADATA_ADDRESSES:
        return f"{ip} is a cloud metadata address"
    for flag, label in (("is_loopback", "loopback"), ("is_link_local", "link-local"), ("is_multicast", "multicast"),
                        ("is_unspecified", "unspecified"), ("is_reserved", "reserved"), ("is_private", "private")):
        if getattr(ip, flag):
            return f"{ip} is a {label} address"
    if not ip.is_global:  # shared address space (100.64.0.0/10) and the like
        return f"{ip} is not a public address"
    return None


def literal(host: str) -> IpAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def hostname_problem(host: str) -> str | None:
    name = host.rstrip(".").lower()
    if name in BLOCKED_HOSTNAMES or name.endswith(BLOCKED_SUFFIXES):
        return f"{host} names an internal service"
    if "." not in name and literal(name) is None and not name.isdigit():
        return f"{host} is not a public host name (no domain)"
    return None
