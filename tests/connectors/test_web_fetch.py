"""``web_fetch``'s adapter against a loopback web server: readable text, limits, redirects, TLS,
and the SSRF guard: loopback, private, link-local, metadata and other non-public destinations are
refused before any connection, also when a redirect or a DNS answer leads there.

The loopback server is reachable only because tests allowlist its host (``allow_hosts``, what
``WEB_FETCH_ALLOW_HOSTS`` sets); every refusal test runs without that allowlist.
"""

from __future__ import annotations

import dataclasses
import ipaddress
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shared.config import Settings
from shared.connectors.web import WebFetcher, address_problem
from shared.errors import ConfigurationError, ToolError
from tests.connectors.web_pages import PageServer, make_ca_and_cert

ARTICLE = """<!doctype html><html><head><meta charset="utf-8"><title>Release notes &amp; more</title>
<style>body { color: red }</style><script>var secret = "do not show";</script></head>
<body><h1>Version 2.0</h1><p>New <a href="/docs/api">API</a> and <code>run()</code>.</p>
<ul><li>faster</li><li>smaller</li></ul><img src="/logo.png" alt="logo"></body></html>"""


@pytest.fixture
def web() -> Iterator[PageServer]:
    with PageServer() as server:
        yield server


def allowed(**kwargs: Any) -> WebFetcher:
    return WebFetcher(allow_hosts=["127.0.0.1"], **kwargs)


def refuses(fetcher: WebFetcher, url: str, problem: str, timeout_s: float) -> None:
    """``fetcher`` refuses to read ``url``: a ``ToolError`` saying ``problem`` (a regex)."""
    with pytest.raises(ToolError, match=problem):
        fetcher.fetch(url, timeout_s=timeout_s)


# ---- reading -------------------------------------------------------------------------------------

def test_html_becomes_readable_text(web: PageServer) -> None:
    web.page("/notes", ARTICLE)
    page = allowed().fetch(web.url("/notes"), timeout_s=10)
    assert (page.status, page.content_type, page.title) == (200, "text/html", "Release notes & more")
    assert page.text == (f"# Version 2.0\n\nNew [API]({web.url('/docs/api')}) and `run()`.\n\n"
                         "  * faster\n  * smaller")
    assert "secret" not in page.text and "color" not in page.text and "logo" not in page.text
    assert web.seen[0].headers["host"] == f"127.0.0.1:{web.port}"
    assert web.seen[0].headers["user-agent"].startswith("AgentRuntime-WebFetch/")


def test_text_json_charsets_and_compression(web: PageServer) -> None:
    web.raw("/plain", b"just text\n", "text/plain")
    web.raw("/latin1", "café".encode("latin-1"), "text/plain; charset=ISO-8859-1")
    web.raw("/meta", '<html><head><meta charset="windows-1252"></head><body>na\xefve</body></html>'.encode("cp1252"),
            "text/html")
    web.raw("/json", b'{"ok": true}', "application/json")
    web.gzipped("/gz", "compressed " * 100)
    fetcher = allowed()
    assert fetcher.fetch(web.url("/plain"), timeout_s=10).text == "just text\n"
    assert fetcher.fetch(web.url("/latin1"), timeout_s=10).text == "café"
    assert fetcher.fetch(web.url("/meta"), timeout_s=10).text == "naïve"
    assert fetcher.fetch(web.url("/json"), timeout_s=10).text == '{"ok": true}'
    gz = fetcher.fetch(web.url("/gz"), timeout_s=10)
    assert gz.text == "compressed " * 100 and gz.bytes_read == 1100


def test_size_limit_reads_only_the_start(web: PageServer) -> None:
    web.raw("/big", b"a" * 5000, "text/plain")
    web.gzipped("/bomb", "b" * 200_000)  # 200 kB once inflated, a few hundred bytes on the wire
    page = allowed(max_bytes=1000).fetch(web.url("/big"), timeout_s=10)
    assert (page.bytes_read, page.truncated, page.text) == (1000, True, "a" * 1000)
    bomb = allowed(max_bytes=1000).fetch(web.url("/bomb"), timeout_s=10)
    assert (bomb.bytes_read, bomb.truncated) == (1000, True)
    small = allowed(max_bytes=5000).fetch(web.url("/big"), timeout_s=10)
    assert (small.bytes_read, small.truncated) == (5000, False)


def test_refused_answers(web: PageServer) -> None:
    web.raw("/image", b"\x89PNG....", "image/png")
    web.raw("/pdf", b"%PDF-1.7", "application/pdf")
    fetcher = allowed()
    refuses(fetcher, web.url("/image"), r"is not a text page \(image/png\); only HTML and text can be read", 10)
    refuses(fetcher, web.url("/pdf"), r"application/pdf", 10)
    refuses(fetcher, web.url("/missing"), r"answered HTTP 404 Not Found", 10)


def test_the_time_limit_covers_a_slow_body(web: PageServer) -> None:
    web.slow("/slow", size=200, every_s=0.05)  # ten seconds to send it all
    refuses(allowed(), web.url("/slow"), r"was still sending after the time limit", 0.5)
    refuses(allowed(), web.url("/slow"), r"did not answer within the time limit", 0)


def test_redirects_are_followed_and_bounded(web: PageServer) -> None:
    web.page("/final", "<title>Final</title><p>here</p>")
    web.redirect("/a", "/b", 301)
    web.redirect("/b", web.url("/final"), 307)
    page = allowed().fetch(web.url("/a"), timeout_s=10)
    assert (page.title, page.final_url, page.url) == ("Final", web.url("/final"), web.url("/a"))
    assert page.redirects == [web.url("/b"), web.url("/final")]
    assert web.hits == ["/a", "/b", "/final"]
    web.redirect("/loop", "/loop")
    refuses(allowed(), web.url("/loop"), r"more than 5 redirects", 10)
    assert web.hits.count("/loop") == 6


def test_the_checked_address_is_the_one_connected_to(web: PageServer) -> None:
    # The resolver is asked once per hop and the connection goes to its answer, with the name as Host:
    # a second DNS answer (rebinding) never gets a say.
    asked: list[str] = []

    def resolver(host: str, port: int) -> list[str]:
        asked.append(host)
        return ["127.0.0.1"]

    web.page("/p", "<p>pinned</p>")
    page = WebFetcher(allow_hosts=["docs.example.test"], resolver=resolver).fetch(
        web.url("/p", host="docs.example.test"), timeout_s=10)
    assert page.text == "pinned" and asked == ["docs.example.test"]
    assert web.seen[0].headers["host"] == f"docs.example.test:{web.port}"


def test_https_verifies_the_certificate_against_the_host_name(tmp_path: Path) -> None:
    ca, cert, key = make_ca_and_cert(tmp_path, ["docs.example.test"])
    with PageServer(tls=(cert, key)) as web:
        web.page("/secure", "<title>TLS</title><p>over https</p>")
        fetcher = WebFetcher(allow_hosts=["docs.example.test", "other.example.test"], ca_certs=str(ca),
                             resolver=lambda host, port: ["127.0.0.1"])
        page = fetcher.fetch(web.url("/secure", host="docs.example.test"), timeout_s=10)
        assert (page.title, page.text) == ("TLS", "over https")
        refuses(fetcher, web.url("/secure", host="other.example.test"),
                r"the TLS certificate of other.example.test could not be verified", 10)
        untrusted = WebFetcher(allow_hosts=["docs.example.test"], resolver=lambda host, port: ["127.0.0.1"])
        with pytest.raises(ToolError, match=r"could not be verified"):  # certifi does not know the test CA
            untrusted.fetch(web.url("/secure", host="docs.example.test"), timeout_s=10)


# ---- the SSRF guard --------------------------------------------------------------------------------

@pytest.mark.parametrize(("url", "reason"), [
    ("http://127.0.0.1/", "127.0.0.1 is a loopback address"),
    ("http://127.1.2.3/admin", "loopback"),
    ("http://[::1]/", "::1 is a loopback address"),
    ("http://[::ffff:127.0.0.1]/", "loopback address (inside ::ffff:7f00:1)"),
    ("http://2130706433/", "127.0.0.1 is a loopback address"),  # 127.0.0.1 as one decimal number
    ("http://0x7f.0.0.1/", "127.0.0.1 is a loopback address"),
    ("http://0.0.0.0/", "0.0.0.0 is a"),
    ("http://10.0.0.8/", "10.0.0.8 is a private address"),
    ("http://172.16.5.4/", "private"),
    ("http://192.168.1.1/", "private"),
    ("http://100.64.0.1/", "100.64.0.1 is not a public address"),
    ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a cloud metadata address"),
    ("http://169.254.1.1/", "169.254.1.1 is a link-local address"),
    ("http://[fd00:ec2::254]/", "fd00:ec2::254 is a cloud metadata address"),
    ("http://[fe80::1]/", "link-local"),
    ("http://[fc00::5]/", "private"),
    ("http://224.0.0.251/", "multicast"),
    ("http://[ff02::1]/", "multicast"),
    ("http://240.0.0.1/", "reserved"),
    ("http://[2002:c0a8:101::1]/", "192.168.1.1 is a private address (inside 2002:c0a8:101::1)"),  # 6to4
    ("http://[64:ff9b::a9fe:a9fe]/", "169.254.169.254 is a cloud metadata address"),  # NAT64
    ("http://metadata.google.internal/computeMetadata/v1/", "metadata.google.internal names an internal service"),
    ("http://metadata/computeMetadata/v1/", "metadata names an internal service"),
    ("http://localhost/", "localhost names an internal service"),
    ("http://api.localhost/", "internal service"),
    ("http://db.prod.internal/", "internal service"),
    ("http://printer.local/", "internal service"),
    ("http://intranet/", "intranet is not a public host name (no domain)"),
])
def test_non_public_destinations_are_refused_before_connecting(network_guard: Any, url: str, reason: str) -> None:
    with pytest.raises(ToolError, match="web_fetch refused") as info:
        WebFetcher().fetch(url, timeout_s=5)
    assert reason in str(info.value)
    assert network_guard.blocked == []  # refused by the guard itself: no connect was even tried


@pytest.mark.parametrize(("url", "message"), [
    ("file:///etc/passwd", "only http and https URLs can be fetched, not 'file'"),
    ("gopher://example.com/", "not 'gopher'"),
    ("ftp://example.com/x", "not 'ftp'"),
    ("//example.com/x", "not a relative URL"),
    ("javascript:alert(1)", "not 'javascript'"),
    ("http://user:pw@example.com/", "URLs with credentials (user:password@) are refused"),
    ("http://example.com:8080/", "port 8080 is refused; only 80 and 443 can be fetched"),
    ("https://example.com:22/", "port 22 is refused"),
    ("http://[::1/", "is not a valid URL"),
    ("http:///nohost", "has no host"),
])
def test_malformed_or_unsupported_urls(url: str, message: str) -> None:
    with pytest.raises(ToolError) as info:
        WebFetcher().fetch(url, timeout_s=5)
    assert message in str(info.value)


def test_every_resolved_address_must_be_public() -> None:
    table = {"evil.example.com": ["10.1.2.3"], "mixed.example.com": ["93.184.216.34", "169.254.169.254"],
             "v6.example.com": ["2606:4700:4700::1111", "::1"]}
    fetcher = WebFetcher(resolver=lambda host, port: table[host])
    refuses(fetcher, "http://evil.example.com/",
            r"evil.example.com resolves to a non-public address \(10.1.2.3 is a private", 5)
    refuses(fetcher, "https://mixed.example.com/", r"169.254.169.254 is a cloud metadata address", 5)
    refuses(fetcher, "https://v6.example.com/", r"::1 is a loopback address", 5)


def test_a_redirect_to_a_private_address_is_refused(web: PageServer) -> None:
    web.redirect("/to-metadata", "http://169.254.169.254/computeMetadata/v1/instance/service-accounts/default/token")
    web.redirect("/to-loopback-name", f"http://localhost:{web.port}/secret")
    web.redirect("/to-private", "http://10.0.0.1/")
    web.redirect("/to-file", "file:///etc/passwd")
    web.page("/secret", "<p>internal</p>")
    fetcher = allowed()  # the first hop is allowlisted; the redirect target is checked on its own
    refuses(fetcher, web.url("/to-metadata"), r"169.254.169.254 is a cloud metadata address", 5)
    refuses(fetcher, web.url("/to-loopback-name"), r"port \d+ is refused", 5)
    refuses(fetcher, web.url("/to-private"), r"10.0.0.1 is a private address", 5)
    refuses(fetcher, web.url("/to-file"), r"not 'file'", 5)
    assert "/secret" not in web.hits


@pytest.mark.parametrize("address", ["93.184.216.34", "8.8.8.8", "1.1.1.1", "2606:4700:4700::1111",
                                     "2a00:1450:4007:80e::200e", "::ffff:93.184.216.34"])
def test_public_addresses_pass(address: str) -> None:
    assert address_problem(ipaddress.ip_address(address)) is None


# ---- settings ------------------------------------------------------------------------------------

def test_the_allowlist_setting_is_refused_on_cloud_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WEB_FETCH_ALLOW_HOSTS", "127.0.0.1, Localhost ,[::1]")
    assert Settings.from_env().web_fetch_allow_hosts == ("127.0.0.1", "localhost", "::1")
    monkeypatch.setenv("K_SERVICE", "agent-run")
    monkeypatch.setenv("AUTH_MODE", "firebase")
    with pytest.raises(ConfigurationError, match="WEB_FETCH_ALLOW_HOSTS is for tests and local development only"):
        Settings.from_env()
    monkeypatch.delenv("WEB_FETCH_ALLOW_HOSTS")
    settings = Settings.from_env()
    assert settings.web_fetch_allow_hosts == () and settings.web_fetch_max_bytes == 2 * 1024 * 1024
    assert dataclasses.replace(settings, web_fetch_timeout_s=3.0).web_fetch_timeout_s == 3.0
