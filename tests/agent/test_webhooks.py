"""Webhooks (docs/run-control.md): a run's stops delivered, signed (verified with the Standard
Webhooks reference library), at least once, to a local receiver that fails the first attempts; on
both real stores, messages delivered by hand through the router."""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from shared.agent.webhooks import WebhookRequest, Webhooks
from shared.api import RunRequest
from shared.delivery.sender import ATTEMPT_DELAYS_S, MAX_ATTEMPTS
from shared.errors import InvalidInput
from shared.models.scripted import FunctionModel, ScriptedModel, call, calls_turn, text_turn
from shared.runtime import Runtime
from tests.agent.conftest import MakeRuntime
from tests.agent.test_loop import start_and_drive
from tests.e2e.test_openapi import KEY
from tests.messages import deliver


class Receiver:
    """A local HTTP receiver that answers 500 to its first ``fail`` requests, then 204."""

    def __init__(self, fail: int) -> None:
        self.fail = fail
        self.got: list[tuple[dict[str, str], bytes]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.got.append(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(500 if len(receiver.got) <= receiver.fail else 204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver(fail=3)
    yield r
    r.close()


def make(make_runtime: MakeRuntime, model: Any) -> Runtime:
    return make_runtime(model, credentials_encryption_key=KEY, mcp_allow_private_urls=True)


def test_a_receiver_down_for_three_attempts_gets_the_delivery_signed_with_one_id(
        make_runtime: MakeRuntime, receiver: Receiver) -> None:
    rt = make(make_runtime, ScriptedModel([text_turn("Done.")]))
    hooks = Webhooks(rt.services)
    secret = hooks.put("alice", "ops", WebhookRequest(url=receiver.url, events=["run.completed"])).secret
    assert secret is not None and secret.startswith("whsec_")
    result, _ = start_and_drive(rt, "hi")
    deliver(rt)  # the first attempt: 500
    log = hooks.delivery_log("alice", "ops").deliveries
    assert [(d.status, d.attempts) for d in log] == [("retrying", 1)]
    later = 0.0
    deliverer = hooks.deliverer()
    for expected in ("retrying", "retrying", "delivered"):
        later += sum(ATTEMPT_DELAYS_S) + 1  # the next attempt is due
        timed = dataclasses.replace(deliverer, clock=lambda at=later: deliverer.clock() + at)
        assert timed.retry_due() == 1
        batch = rt.dispatcher.take()  # type: ignore[attr-defined]
        assert [m.kind for m in batch] == ["deliver"]
        record = timed.attempt(batch[0].unitId)
        assert record is not None and record.status == expected
    assert len(receiver.got) == 4
    ids = {h["webhook-id"] for h, _ in receiver.got}
    assert ids == {log[0].deliveryId}  # every attempt carries the same id: the receiver de-duplicates
    verifier = Webhook(secret)
    # the first attempt was made now: the reference library checks its signature and timestamp
    payload = verifier.verify(receiver.got[0][1], receiver.got[0][0])
    assert payload["type"] == "run.completed" and payload["data"]["runId"] == result.run_id
    for headers, body in receiver.got:  # the retries were signed at their (simulated, later) time
        at = datetime.fromtimestamp(int(headers["webhook-timestamp"]), tz=UTC)
        assert verifier.sign(headers["webhook-id"], at, body.decode()) == headers["webhook-signature"]
        assert body == receiver.got[0][1]  # the same bytes every time
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(receiver.got[-1][1] + b" ", receiver.got[-1][0])
    done = hooks.delivery_log("alice", "ops").deliveries[0]
    assert done.status == "delivered" and [a.statusCode for a in done.log] == [500, 500, 500, 204]
    assert rt.services.outbox.repo.all() == []


def test_events_are_filtered_and_a_runs_own_url_is_signed_by_default(make_runtime: MakeRuntime,
                                                                      receiver: Receiver) -> None:
    receiver.fail = 0
    model = FunctionModel(lambda r: calls_turn(call("save_memory", {"text": "x"})) if len(r.turns) == 1
                          else text_turn("ok"))
    rt = make(make_runtime, model)
    hooks = Webhooks(rt.services)
    with pytest.raises(InvalidInput, match="default"):
        rt.agent.start("alice", RunRequest(prompt="hi", webhook=receiver.url))
    secret = hooks.put("alice", "default", WebhookRequest(url=receiver.url, events=["run.failed"])).secret
    hooks.put("alice", "pauses", WebhookRequest(url=receiver.url, events=["run.*"]))
    paused, _ = start_and_drive(rt, "remember x", webhook=receiver.url + "?run=1")
    assert paused.status == "awaiting_confirmation"
    deliver(rt)
    kinds = sorted((h["webhook-id"][:4], json.loads(b)["type"]) for h, b in receiver.got)
    assert kinds == [("msg_", "run.awaiting_approval"), ("msg_", "run.awaiting_approval")]
    Webhook(secret).verify(receiver.got[-1][1], receiver.got[-1][0])
    assert [d.eventType for d in hooks.delivery_log("alice", "default").deliveries] == ["run.awaiting_approval"]
    assert [d.eventType for d in hooks.delivery_log("alice", "pauses").deliveries] == ["run.awaiting_approval"]


def test_a_url_that_is_not_public_is_refused_and_attempts_are_bounded(make_runtime: MakeRuntime) -> None:
    rt = make_runtime(ScriptedModel([]), credentials_encryption_key=KEY)
    with pytest.raises(InvalidInput) as err:
        Webhooks(rt.services).put("alice", "x", WebhookRequest(url="http://127.0.0.1:9/hook", events=["run.*"]))
    assert err.value.code == "WEBHOOK_URL_NOT_ALLOWED"
    assert MAX_ATTEMPTS == 8 and sum(ATTEMPT_DELAYS_S) > 24 * 3600


def test_a_webhook_created_after_earlier_runs_gets_the_next_runs_stop(make_runtime: MakeRuntime,
                                                                       receiver: Receiver) -> None:
    """A user with no webhook: the stamps say so after the first run, and later runs' stops ask
    nothing (tests/limits/test_stamps.py counts it); a webhook put (or deleted) later moves the
    stamp, so the next run's stop finds it (this process's cached list is not reused)."""
    receiver.fail = 0
    rt = make(make_runtime, FunctionModel(lambda r: text_turn("ok")))
    hooks = Webhooks(rt.services)
    for prompt in ("one", "two"):
        start_and_drive(rt, prompt)
    deliver(rt)
    stamp = rt.services.runs.store.get("users/alice/stamps/config")
    assert stamp is not None and stamp.data.get("webhooks") == 0 and receiver.got == []
    hooks.put("alice", "late", WebhookRequest(url=receiver.url, events=["run.completed"]))
    first, _ = start_and_drive(rt, "three")
    deliver(rt)
    assert [json.loads(b)["data"]["runId"] for _, b in receiver.got] == [first.run_id]
    assert hooks.delete("alice", "late")
    start_and_drive(rt, "four")
    deliver(rt)
    assert len(receiver.got) == 1
    hooks.put("alice", "again", WebhookRequest(url=receiver.url, events=["run.*"]))
    last, _ = start_and_drive(rt, "five")
    deliver(rt)
    assert [json.loads(b)["data"]["runId"] for _, b in receiver.got] == [first.run_id, last.run_id]
