"""The events routes as Server-Sent Events, resumed with Last-Event-ID; heartbeats while a follow
waits and the event that closes a follow window (issue 34)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from flask.testing import FlaskClient

from shared.models.scripted import ScriptedModel, call, calls_turn, text_turn
from shared.runtime import Runtime
from tests.e2e.conftest import ALICE, BOB, Install
from tests.e2e.sse_frames import parse_sse

SSE = {**ALICE, "Accept": "text/event-stream"}


def paused_run(rt: Runtime, client: FlaskClient) -> dict[str, Any]:
    body = client.post("/api/agent/run", json={"prompt": "remember tea"}, headers=ALICE).get_json()
    assert body["status"] == "awaiting_confirmation"
    return body  # type: ignore[no-any-return]


def ndjson_lines(body: bytes) -> list[dict[str, Any]]:
    return [json.loads(x) for x in body.decode().splitlines() if x.strip()]


def test_sse_frames_carry_type_and_seq_and_equal_the_ndjson(install: Install, client: FlaskClient) -> None:
    rt = install(ScriptedModel([calls_turn(call("save_memory", {"text": "tea"}))]))
    run_id = paused_run(rt, client)["runId"]
    resp = client.get(f"/api/agent/runs/{run_id}/events", headers=SSE)
    assert resp.status_code == 200 and resp.mimetype == "text/event-stream"
    assert resp.headers["Cache-Control"] == "no-store"
    frames, comments = parse_sse(resp.data.decode())
    plain = ndjson_lines(client.get(f"/api/agent/runs/{run_id}/events", headers=ALICE).data)
    assert [f.json for f in frames] == plain and comments == []
    assert [f.id for f in frames] == [str(e["seq"]) for e in plain]
    assert [f.event for f in frames] == [e["type"] for e in plain]


@pytest.mark.parametrize("how", ["header", "query"])
def test_last_event_id_continues_after_that_seq(install: Install, client: FlaskClient, how: str) -> None:
    rt = install(ScriptedModel([calls_turn(call("save_memory", {"text": "tea"}))]))
    run_id = paused_run(rt, client)["runId"]
    everything = ndjson_lines(client.get(f"/api/agent/runs/{run_id}/events", headers=ALICE).data)
    assert len(everything) >= 3
    for cut in range(len(everything) + 1):
        if how == "header":  # an EventSource reconnects with its URL unchanged (after=0) and the header
            resp = client.get(f"/api/agent/runs/{run_id}/events?after=0", headers={**SSE, "Last-Event-ID": str(cut)})
        else:  # a client that cannot set headers adds lastEventId to a URL that may still say after=0
            resp = client.get(f"/api/agent/runs/{run_id}/events?after=0&lastEventId={cut}", headers=SSE)
        frames, _ = parse_sse(resp.data.decode())
        assert everything[:cut] + [f.json for f in frames] == everything


@pytest.mark.parametrize(("query", "headers", "code", "field"), [
    ("?lastEventId=x", {}, "INVALID_QUERY", "lastEventId"),
    ("", {"Last-Event-ID": "-1"}, "INVALID_LAST_EVENT_ID", "Last-Event-ID"),
    ("", {"Last-Event-ID": "seven"}, "INVALID_LAST_EVENT_ID", "Last-Event-ID"),
])
def test_bad_resume_positions_are_400(install: Install, client: FlaskClient, query: str, headers: dict[str, str],
                                      code: str, field: str) -> None:
    rt = install(ScriptedModel([calls_turn(call("save_memory", {"text": "tea"}))]))
    run_id = paused_run(rt, client)["runId"]
    resp = client.get(f"/api/agent/runs/{run_id}/events{query}", headers={**SSE, **headers})
    assert resp.status_code == 400 and resp.mimetype == "application/json"
    error = resp.get_json()["error"]
    assert error["code"] == code and error["details"]["field"] == field


def test_sse_events_are_owner_only(install: Install, client: FlaskClient) -> None:
    rt = install(ScriptedModel([calls_turn(call("save_memory", {"text": "tea"}))]))
    run_id = paused_run(rt, client)["runId"]
    resp = client.get(f"/api/agent/runs/{run_id}/events", headers={**BOB, "Accept": "text/event-stream"})
    assert resp.status_code == 404 and resp.mimetype == "application/json"


@pytest.mark.parametrize("sse", [False, True])
def test_a_follow_on_a_paused_run_sends_heartbeats_then_a_closing_event(install: Install, client: FlaskClient,
                                                                        sse: bool) -> None:
    # The window and the heartbeat period are set small; the test counts, it does not time.
    rt = install(ScriptedModel([calls_turn(call("save_memory", {"text": "tea"}))]), heartbeat_s=0.05,
                 follow_max_wait_s=0.6)
    run_id = paused_run(rt, client)["runId"]
    last = rt.runs.get_run(run_id).run.last_seq  # type: ignore[union-attr]
    url = f"/api/agent/runs/{run_id}/events?after={last}&follow=1&until=end"
    resp = client.get(url, headers=SSE if sse else ALICE)
    assert resp.status_code == 200
    if sse:
        frames, comments = parse_sse(resp.data.decode())
        events = [f.json for f in frames]
        beats = comments.count("heartbeat")
        assert [f.id for f in frames] == [str(last)]  # the closing event repeats the last seq
    else:
        lines = ndjson_lines(resp.data)
        beats = sum(1 for e in lines if e == {"type": "heartbeat"})
        events = [e for e in lines if e["type"] != "heartbeat"]
    assert beats >= 2
    [closing] = events
    assert closing == {"type": "stream_end", "seq": last, "runId": run_id, "status": "awaiting_confirmation",
                       "reason": "stream_time_spent",
                       "follow": f"/api/agent/runs/{run_id}/events?after={last}&follow=1&until=end"}


def test_a_follow_never_ends_with_an_empty_200(install: Install, client: FlaskClient) -> None:
    rt = install(ScriptedModel([calls_turn(call("save_memory", {"text": "tea"})), text_turn("Saved.")]),
                 heartbeat_s=0.05, follow_max_wait_s=0.6)
    body = paused_run(rt, client)
    run_id, last = body["runId"], rt.runs.get_run(body["runId"]).run.last_seq  # type: ignore[union-attr]
    # follow=1 (until the run stops) on a run already paused: it says it waits for a decision.
    [closing] = ndjson_lines(client.get(f"/api/agent/runs/{run_id}/events?after={last}&follow=1", headers=ALICE).data)
    assert (closing["type"], closing["reason"], closing["status"]) == ("stream_end", "awaiting_approval",
                                                                        "awaiting_confirmation")
    # A follow that reads the pause itself ends with it (result), no closing event after it.
    read = ndjson_lines(client.get(f"/api/agent/runs/{run_id}/events?after=0&follow=1", headers=ALICE).data)
    assert read[-1]["type"] == "result" and all(e["type"] != "stream_end" for e in read)
    # A page read (no follow) may be empty: it is not a window.
    assert client.get(f"/api/agent/runs/{run_id}/events?after={last}", headers=ALICE).data == b""



@pytest.mark.parametrize("sse", [False, True])
def test_a_live_stream_sends_heartbeats_while_the_model_is_quiet(install: Install, client: FlaskClient,
                                                                 sse: bool) -> None:
    """The model answers only once the client has read two heartbeats from the open stream: counts,
    not timing."""
    import threading

    from shared.models.base import ModelRequest, ModelResponse

    heard = threading.Event()

    def slow(request: ModelRequest) -> ModelResponse:
        assert heard.wait(30), "the client never read two heartbeats"
        return ModelResponse(turn=text_turn("Done."), finish_reason="STOP")

    install(ScriptedModel([slow]), heartbeat_s=0.05)
    resp = client.post("/api/agent/run/stream", json={"prompt": "take your time"},
                       headers=SSE if sse else ALICE, buffered=False)
    assert resp.status_code == 200
    body, beats = b"", 0
    for chunk in resp.response:
        body += chunk
        beats = body.count(b": heartbeat\n\n") if sse else body.count(b'{"type":"heartbeat"}\n')
        if beats >= 2:
            heard.set()
    assert beats >= 2
    if sse:
        frames, _ = parse_sse(body.decode())
        events = [f.json for f in frames]
    else:
        events = [e for e in ndjson_lines(body) if e["type"] != "heartbeat"]
    assert events[-1]["type"] == "result" and events[-1]["result"]["status"] == "completed"
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))  # heartbeats take no seq
