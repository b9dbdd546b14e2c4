"""The sessions events route as Server-Sent Events, resumed with Last-Event-ID, and the event that
closes a follow (issue 34)."""

from __future__ import annotations

import json

import pytest
from flask.testing import FlaskClient

from devserver import create_app
from tests.e2e.sse_frames import parse_sse
from tests.plans.conftest import MakeRuntime
from tests.plans.support import Script
from tests.plans.test_sessions_http import ALICE, create, events

SSE = {**ALICE, "Accept": "text/event-stream"}


@pytest.fixture
def client() -> FlaskClient:
    return create_app().test_client()


def test_sse_and_last_event_id_on_the_sessions_events_route(make_rt: MakeRuntime, client: FlaskClient) -> None:
    make_rt(Script(), heartbeat_s=0.05)
    sid = create(client)["sessionId"]
    plain = events(client, sid)
    assert plain
    resp = client.get(f"/api/agent/sessions/{sid}/events", headers=SSE)
    assert resp.mimetype == "text/event-stream"
    frames, _ = parse_sse(resp.data.decode())
    assert [f.json for f in frames] == plain and [f.id for f in frames] == [str(e["seq"]) for e in plain]
    for cut in range(len(plain) + 1):
        resumed, _ = parse_sse(client.get(f"/api/agent/sessions/{sid}/events?after=0",
                                          headers={**SSE, "Last-Event-ID": str(cut)}).data.decode())
        assert plain[:cut] + [f.json for f in resumed] == plain
    # following a session that waits for its plan's review: a closing event says so, never an empty 200
    last = plain[-1]["seq"]
    followed = [json.loads(x) for x in client.get(f"/api/agent/sessions/{sid}/events?after={last}&follow=1",
                                                  headers=ALICE).data.decode().splitlines()]
    assert followed == [{"type": "stream_end", "seq": last, "sessionId": sid, "status": "awaiting_confirmation",
                         "reason": "awaiting_confirmation",
                         "follow": f"/api/agent/sessions/{sid}/events?after={last}&follow=1"}]
