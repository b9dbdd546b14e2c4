"""The Gmail adapter against the local fake: exact requests, decoded messages, error mapping."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from email.header import decode_header, make_header

import pytest
from google.oauth2.credentials import Credentials

from devfakes.google import Fail, FakeGoogle
from shared.connectors import ConnectorError
from shared.connectors.gmail import GmailClient, OutgoingMail
from shared.connectors.google_http import RetryPolicy
from shared.errors import ToolError
from shared.state.docstore import DocStore
from tests.connectors.gmail_support import connected
from tests.connectors.tool_support import started


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


fake = started(FakeGoogle)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def gmail(fake: FakeGoogle, sleeps: Sleeps) -> Iterator[GmailClient]:
    client = GmailClient(Credentials(token=fake.access_token), base_url=fake.base_url,  # type: ignore[no-untyped-call]
                         sender="alice@example.com", retry=RetryPolicy(sleep=sleeps))
    yield client
    client.close()


def gmail_requests(fake: FakeGoogle) -> list[tuple[str, str]]:
    return [(r.method, r.path) for r in fake.requests]


def test_search_lists_then_reads_metadata(fake: FakeGoogle, gmail: GmailClient) -> None:
    fake.add_message("t1", sender="Bob <bob@example.com>", to="alice@example.com", subject="Invoice 12",
                     text="Please pay", snippet="It&#39;s due Friday")
    fake.add_message("t2", sender="carol@example.com", to="alice@example.com", subject="Lunch", text="Noon?")
    found = gmail.search("invoice", max_results=5)
    assert gmail_requests(fake) == [("GET", "/gmail/v1/users/me/messages"),
                                    ("GET", "/gmail/v1/users/me/messages/m0001")]
    assert fake.requests[0].query == {"q": ["invoice"], "maxResults": ["5"], "alt": ["json"]}
    assert fake.requests[1].query == {"format": ["metadata"], "metadataHeaders": ["From", "To", "Subject", "Date"],
                                      "alt": ["json"]}
    assert fake.requests[0].headers["authorization"] == f"Bearer {fake.access_token}"
    [hit] = found.messages
    assert (hit.id, hit.thread_id, hit.sender, hit.subject) == ("m0001", "t1", "Bob <bob@example.com>", "Invoice 12")
    assert hit.snippet == "It's due Friday" and hit.date.startswith("Mon, 2 Mar 2026") and not found.more


def test_search_bounds_results_and_says_more_exist(fake: FakeGoogle, gmail: GmailClient) -> None:
    for i in range(4):
        fake.add_message(f"t{i}", sender="bob@example.com", to="alice@example.com", subject=f"report {i}", text="x")
    found = gmail.search("report", max_results=2)
    assert [m.subject for m in found.messages] == ["report 3", "report 2"] and found.more
    assert gmail.search("report", max_results=500).more is False
    assert fake.requests[-5].query["maxResults"] == ["25"]  # clamped to the adapter's maximum


def test_read_thread_reduces_html_and_trims(fake: FakeGoogle, gmail: GmailClient) -> None:
    fake.add_message("t1", sender="bob@example.com", to="alice@example.com", subject="Plan",
                     html="<html><head><style>p{color:red}</style></head><body><p>Hello&nbsp;<b>Alice</b>,</p>"
                          "<script>alert(1)</script><ul><li>one</li><li>two</li></ul>"
                          "<p>See <a href='https://example.com/doc'>the doc</a></p></body></html>",
                     attachment="plan.pdf")
    fake.add_message("t1", sender="alice@example.com", to="bob@example.com", subject="Re: Plan", text="y" * 9000)
    thread = gmail.read_thread("t1")
    assert gmail_requests(fake) == [("GET", "/gmail/v1/users/me/threads/t1")]
    assert fake.requests[0].query == {"format": ["full"], "alt": ["json"]}
    first, second = thread.messages
    assert first.body == "Hello Alice,\n\n- one\n- two\n\nSee the doc (https://example.com/doc)"
    assert "alert" not in first.body and "color" not in first.body
    assert first.attachments == ["plan.pdf"] and first.message_id == "<m0001@mail.example.com>"
    assert len(second.body) < 4100 and second.body.endswith("…")
    assert second.notes == ["the body has 9000 characters; showing the first 4000"]


def test_long_threads_keep_the_latest_messages(fake: FakeGoogle, gmail: GmailClient) -> None:
    for i in range(12):
        fake.add_message("t1", sender="bob@example.com", to="alice@example.com", subject=f"n{i}", text=str(i))
    thread = gmail.read_thread("t1")
    assert [m.body for m in thread.messages] == [str(i) for i in range(2, 12)]
    assert thread.notes == ["the thread has 12 messages; showing the last 10"]


def test_send_builds_an_rfc5322_message(fake: FakeGoogle, gmail: GmailClient) -> None:
    sent = gmail.send(OutgoingMail(to=["bob@example.com", "dan@example.org"], cc=["carol@example.com"],
                                   bcc=["eve@example.net"], subject="Réunion à 10h ✓", body="Bonjour Bob,\nà demain."))
    assert gmail_requests(fake) == [("POST", "/gmail/v1/users/me/messages/send")]
    body = fake.requests[0].json()
    assert set(body) == {"raw"}
    raw = body["raw"]
    assert "=" not in raw and "+" not in raw and "/" not in raw  # base64url, unpadded
    wire = base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4))
    assert wire.isascii() and b"\r\n" in wire  # 7-bit, CRLF line endings
    assert "Réunion".encode() not in wire  # the subject travels as an RFC 2047 encoded word
    msg = fake.sent[0].message
    assert msg["From"] == "alice@example.com"
    assert msg["To"] == "bob@example.com, dan@example.org"
    assert msg["Cc"] == "carol@example.com" and msg["Bcc"] == "eve@example.net"
    assert str(make_header(decode_header(msg["Subject"]))) == "Réunion à 10h ✓"
    assert msg["Date"] and msg["MIME-Version"] == "1.0"
    assert msg.get_content_type() == "text/plain" and msg.get_content_charset() == "utf-8"
    assert msg.get_content().replace("\r\n", "\n") == "Bonjour Bob,\nà demain.\n"
    assert msg["In-Reply-To"] is None
    assert (sent.id, sent.thread_id) == ("s0001", "s0001")


def test_reply_threads_correctly(fake: FakeGoogle, gmail: GmailClient) -> None:
    fake.add_message("t9", sender="bob@example.com", to="alice@example.com", subject="Budget",
                     message_id="<a1@example.com>", text="first")
    fake.add_message("t9", sender="bob@example.com", to="alice@example.com", subject="Re: Budget",
                     message_id="<a2@example.com>", references="<a1@example.com>", text="second")
    sent = gmail.reply_to("t9", to=["bob@example.com"], body="Agreed.")
    assert gmail_requests(fake) == [("GET", "/gmail/v1/users/me/threads/t9"),
                                    ("POST", "/gmail/v1/users/me/messages/send")]
    assert fake.requests[0].query["format"] == ["metadata"]
    assert fake.requests[1].json()["threadId"] == "t9"
    msg = fake.sent[0].message
    assert msg["Subject"] == "Re: Budget"  # not "Re: Re: Budget"
    assert msg["In-Reply-To"] == "<a2@example.com>"
    assert msg["References"] == "<a1@example.com> <a2@example.com>"
    assert msg["To"] == "bob@example.com" and sent.thread_id == "t9"


def test_reply_to_a_first_message_adds_re(fake: FakeGoogle, gmail: GmailClient) -> None:
    fake.add_message("t1", sender="bob@example.com", to="alice@example.com", subject="Budget",
                     message_id="<a1@example.com>", text="first")
    gmail.reply_to("t1", to=["bob@example.com"], body="Yes")
    msg = fake.sent[0].message
    assert (msg["Subject"], msg["In-Reply-To"], msg["References"]) == ("Re: Budget", "<a1@example.com>",
                                                                      "<a1@example.com>")


def test_draft_create(fake: FakeGoogle, gmail: GmailClient) -> None:
    draft = gmail.create_draft(OutgoingMail(to=["bob@example.com"], subject="Later", body="Draft text"))
    assert gmail_requests(fake) == [("POST", "/gmail/v1/users/me/drafts")]
    body = fake.requests[0].json()
    assert set(body) == {"message"} and set(body["message"]) == {"raw"}
    assert fake.drafts[0].message["Subject"] == "Later" and not fake.sent
    assert draft.draft_id == "r-s0001"


def test_unknown_thread_is_a_clear_tool_error(fake: FakeGoogle, gmail: GmailClient) -> None:
    with pytest.raises(ToolError, match="Gmail: thread 'nope' was not found"):
        gmail.read_thread("nope")
    with pytest.raises(ToolError, match="thread 'nope' was not found"):
        gmail.reply_to("nope", to=["bob@example.com"], body="x")
    assert not fake.sent


def test_rate_limit_is_retried_with_backoff(fake: FakeGoogle, gmail: GmailClient, sleeps: Sleeps) -> None:
    fake.fail(Fail(429, "POST", "/gmail/v1/users/me/messages/send", times=2))
    gmail.send(OutgoingMail(to=["bob@example.com"], subject="s", body="b"))
    assert len(fake.requests) == 3 and len(fake.sent) == 1
    assert sleeps == [0.5, 1.0]


def test_retry_after_is_honoured(fake: FakeGoogle, gmail: GmailClient, sleeps: Sleeps) -> None:
    fake.fail(Fail(429, retry_after="3"))
    gmail.search("x")
    assert sleeps == [3.0]


def test_rate_limit_gives_up_with_a_clear_error(fake: FakeGoogle, gmail: GmailClient, sleeps: Sleeps) -> None:
    fake.fail(Fail(429, times=10))
    with pytest.raises(ToolError, match=r"Gmail is rate limiting requests .*after 4 attempts"):
        gmail.send(OutgoingMail(to=["bob@example.com"], subject="s", body="b"))
    assert len(fake.requests) == 4 and not fake.sent
    assert sleeps == [0.5, 1.0, 2.0]


def test_server_errors_retry_reads_but_never_sends(fake: FakeGoogle, gmail: GmailClient, sleeps: Sleeps) -> None:
    fake.fail(Fail(503, "GET"))
    gmail.search("x")
    assert len(fake.requests) == 2
    fake.fail(Fail(503, "POST"))
    with pytest.raises(ToolError, match=r"server error \(503\); it may or may not have taken effect"):
        gmail.send(OutgoingMail(to=["bob@example.com"], subject="s", body="b"))
    assert [r.method for r in fake.requests[2:]] == ["POST"]


def test_rejected_credentials_are_a_connector_error(fake: FakeGoogle) -> None:
    creds = Credentials(token="ya29.unknown")  # type: ignore[no-untyped-call]
    with GmailClient(creds, base_url=fake.base_url) as client, pytest.raises(ConnectorError) as exc:
        client.search("x")
    assert exc.value.reason == "unauthorized"


def test_vault_credentials_still_refused_after_refresh(fake: FakeGoogle, sqlite_docstore: DocStore) -> None:
    conn = connected(fake, sqlite_docstore)
    fake.fail(Fail(401, "GET", "/gmail/", times=5))
    with conn.gmail("alice") as client, pytest.raises(ConnectorError, match="reconnect Google") as exc:
        client.search("x")
    assert exc.value.reason == "unauthorized"
    assert len([r for r in fake.requests if r.path == "/token"]) >= 1  # google-auth tried a refresh first


def test_revoked_access_mid_call_is_a_connector_error(fake: FakeGoogle, sqlite_docstore: DocStore) -> None:
    conn = connected(fake, sqlite_docstore)
    fake.valid_tokens.clear()
    fake.revoke("1//fake-refresh-token")
    with conn.gmail("alice") as client, pytest.raises(ConnectorError, match="revoked") as exc:
        client.send(OutgoingMail(to=["bob@example.com"], subject="s", body="b"))
    assert exc.value.reason == "revoked" and not fake.sent
