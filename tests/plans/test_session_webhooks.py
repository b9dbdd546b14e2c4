"""``session.*`` webhook events (docs/run-control.md, "Webhooks"): every way a plan session goes,
walked over HTTP as in ``test_session_statuses``, delivers its transitions to a local receiver,
signed (verified with the Standard Webhooks reference library), one delivery id per event; a
webhook subscribed to ``run.*`` only gets none of them."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from flask.testing import FlaskClient
from standardwebhooks import Webhook

from shared.agent.webhooks import WebhookRequest, Webhooks
from tests.agent.test_webhooks import Receiver
from tests.e2e.test_openapi import KEY
from tests.plans.conftest import MakeRuntime
from tests.plans.test_session_statuses import PATHS, client  # noqa: F401  (the fixture)
from tests.plans.test_sessions_http import deliver

EXPECTED = {
    "completed": ["awaiting_confirmation", "completed"],
    "failed": ["awaiting_confirmation", "failed"],
    "deadline_exceeded_during_execution": ["awaiting_confirmation", "deadline_exceeded"],
    "deadline_exceeded_while_awaiting_approval": ["awaiting_confirmation", "awaiting_approval",
                                                  "deadline_exceeded"],
    "cancelled_before_execution": ["awaiting_confirmation", "cancelled"],
    "cancelled_during_execution": ["awaiting_confirmation", "cancelled"],
    "cancelled_while_awaiting_approval": ["awaiting_confirmation", "awaiting_approval", "cancelled"],
    "rejected": ["awaiting_confirmation", "awaiting_approval", "rejected"],
}
# Cancelling the session's run is the session's cancel: the same deliveries.
EXPECTED.update({f"run_{name}": EXPECTED[name] for name in ("cancelled_before_execution",
                                                            "cancelled_during_execution",
                                                            "cancelled_while_awaiting_approval")})


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver(fail=0)
    yield r
    r.close()


@pytest.mark.parametrize("name", list(PATHS))
def test_a_sessions_transitions_are_delivered_signed(make_rt: MakeRuntime, client: FlaskClient,  # noqa: F811
                                                     receiver: Receiver, name: str) -> None:
    path = PATHS[name]
    rt = make_rt(path.script, credentials_encryption_key=KEY, mcp_allow_private_urls=True)
    hooks = Webhooks(rt.services)
    secret = hooks.put("alice", "sessions", WebhookRequest(url=receiver.url + "?s", events=["session.*"])).secret
    hooks.put("alice", "runs", WebhookRequest(url=receiver.url + "?r", events=["run.*"]))
    assert secret is not None
    sid = path.drive(rt, client)
    deliver(rt)
    verifier = Webhook(secret)
    got = [verifier.verify(body, headers) for headers, body in receiver.got]
    assert all(isinstance(p, dict) for p in got)
    bodies = [json.loads(body) for _, body in receiver.got]
    assert [b["type"] for b in bodies] == [f"session.{s}" for s in EXPECTED[name]]
    assert {b["data"]["sessionId"] for b in bodies} == {sid}
    assert [b["data"]["status"] for b in bodies] == EXPECTED[name]
    ended = bodies[-1]["data"]
    assert (ended["error"] is None) == (path.status in ("completed", "rejected"))
    log = hooks.delivery_log("alice", "sessions").deliveries
    assert sorted(d.eventType for d in log) == sorted(b["type"] for b in bodies)
    assert {d.status for d in log} == {"delivered"}
    assert {h["webhook-id"] for h, _ in receiver.got} == {d.deliveryId for d in log}  # one id each
    assert hooks.delivery_log("alice", "runs").deliveries == []
    assert rt.services.outbox.repo.all() == []
