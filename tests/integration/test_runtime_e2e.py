"""The whole product on real components: HTTP functions, Firebase tokens, the real google-genai SDK
against the fake Gemini server, Firestore and Pub/Sub emulators, and `resume` pushed by Pub/Sub."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from flask.testing import FlaskClient
from functions_framework import create_app
from google.cloud import firestore, pubsub_v1

from devserver import create_app as create_dev_app
from shared.auth import FirebaseAuthenticator
from shared.durable.dispatcher import PubSubDispatcher, RecordingDispatcher
from shared.models.gemini import GeminiModel
from shared.runtime import Runtime, set_runtime
from shared.state.docstore import DocStore
from shared.state.firestore_docstore import FirestoreDocStore
from tests.agent.conftest import make_settings
from tests.emulators import TEST_PROJECT, free_port
from tests.fakes.fake_gemini import FakeGemini, Reply, call, thought, usage
from tests.fakes.firebase_keys import FirebaseKeys
from tests.serving import served


@pytest.fixture
def keys() -> Iterator[FirebaseKeys]:
    with FirebaseKeys(TEST_PROJECT) as k:
        yield k


def runtime(fake: FakeGemini, keys: FirebaseKeys, store: DocStore, **overrides: Any) -> Runtime:
    settings = fake.settings(make_settings(google_cloud_project=TEST_PROJECT, **keys.settings_overrides(),
                                           **overrides))
    auth = FirebaseAuthenticator(TEST_PROJECT, id_token_certs_url=keys.id_token_certs_url,
                                 session_certs_url=keys.session_certs_url)
    dispatcher = PubSubDispatcher(TEST_PROJECT, settings.resume_topic) if settings.dispatcher == "pubsub" \
        else RecordingDispatcher()
    return Runtime(settings, store=store, model=GeminiModel(settings), authenticator=auth, dispatcher=dispatcher)


def ndjson(body: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in body.decode().splitlines() if line.strip()]


@pytest.fixture
def client() -> Iterator[FlaskClient]:
    yield create_dev_app().test_client()
    set_runtime(None)


def test_paused_run_resumes_in_another_process_with_signatures_intact(
        fake_gemini: FakeGemini, keys: FirebaseKeys, firestore_docstore: FirestoreDocStore,
        client: FlaskClient) -> None:
    fake_gemini.push(
        Reply([thought("The user wants me to remember a preference."),
               call("save_memory", {"text": "Alice prefers window seats"})], usage=usage(50, 10, 7)),
        Reply.text("Saved: you prefer window seats."))
    first = runtime(fake_gemini, keys, firestore_docstore)
    set_runtime(first)
    token = keys.id_token("alice")
    resp = client.post("/api/agent/run/stream", json={"prompt": "Remember I like window seats"},
                       headers={"Authorization": f"Bearer {token}"})
    events = ndjson(resp.data)
    assert next(e["type"] for e in events) == "status" and events[-1]["type"] == "result"
    assert any(e["type"] == "thought_delta" for e in events)
    result = events[-1]["result"]
    assert result["status"] == "awaiting_confirmation" and result["model"] == fake_gemini.model
    client.set_cookie("__session", keys.session_cookie("alice"))
    approved = client.post("/api/agent/approve", json={"approvalId": result["approval"]["id"],
                                                       "decision": "approve"})
    assert approved.status_code == 202
    assert isinstance(first.dispatcher, RecordingDispatcher)
    (message,) = first.dispatcher.take()

    # "Another process": a fresh Firestore client, store, model and runtime resume the run.
    other_store = FirestoreDocStore(firestore.Client(project=TEST_PROJECT))
    second = runtime(fake_gemini, keys, other_store)
    second.router.handle(message)

    follow_up = fake_gemini.requests[1].body
    model_turn = follow_up["contents"][1]
    signed_call = next(p for p in model_turn["parts"] if "functionCall" in p)
    assert signed_call["thoughtSignature"]  # replayed verbatim; the fake verified the bytes
    response_part = follow_up["contents"][2]["parts"][0]["functionResponse"]
    assert response_part["name"] == "save_memory" and response_part["response"]["saved"] is True
    snap = second.runs.get_run(result["runId"])
    assert snap is not None and snap.run.status == "completed"
    assert snap.run.usage.thinking_tokens >= 7
    assert [m.text for m in second.users.list_memories("alice")] == ["Alice prefers window seats"]
    replay = ndjson(client.get(f"/api/agent/runs/{result['runId']}/events?after=0",
                               headers={"Authorization": f"Bearer {token}"}).data)
    assert replay[: len(events)] == events
    assert [e["seq"] for e in replay] == list(range(1, len(replay) + 1))
    fake_gemini.assert_complete()


def test_invalid_firebase_tokens_are_refused(fake_gemini: FakeGemini, keys: FirebaseKeys,
                                             firestore_docstore: FirestoreDocStore, client: FlaskClient) -> None:
    set_runtime(runtime(fake_gemini, keys, firestore_docstore))
    expired = keys.id_token("alice", exp=int(time.time()) - 60)
    forged = keys.sign({"sub": "alice"}, key=keys.new_key(publish=False))
    for token in (expired, forged, "dev:alice"):
        resp = client.post("/api/agent/run", json={"prompt": "x"}, headers={"Authorization": f"Bearer {token}"})
        assert resp.status_code == 401
    assert fake_gemini.requests == []


@pytest.fixture
def resume_server() -> Iterator[str]:
    """The deployed `resume` CloudEvent entry point, served over HTTP for the Pub/Sub push."""
    with served(create_app("resume", "main.py", "cloudevent")) as url:
        yield url + "/"


def test_approval_reaches_resume_through_a_pubsub_push_subscription(
        fake_gemini: FakeGemini, keys: FirebaseKeys, firestore_docstore: FirestoreDocStore,
        pubsub_emulator: Any, resume_server: str, client: FlaskClient) -> None:
    topic_name = f"agent-resume-{free_port()}"
    publisher = pubsub_v1.PublisherClient()
    subscriber = pubsub_v1.SubscriberClient()
    topic = publisher.topic_path(TEST_PROJECT, topic_name)
    publisher.create_topic(name=topic)
    subscription = subscriber.subscription_path(TEST_PROJECT, f"{topic_name}-push")
    subscriber.create_subscription(name=subscription, topic=topic,
                                   push_config={"push_endpoint": resume_server})
    try:
        fake_gemini.push(Reply([call("save_memory", {"text": "Alice is vegetarian"})]), Reply.text("Noted."))
        rt = runtime(fake_gemini, keys, firestore_docstore, dispatcher="pubsub", resume_topic=topic_name)
        set_runtime(rt)
        auth = {"Authorization": f"Bearer {keys.id_token('alice')}"}
        body = client.post("/api/agent/run", json={"prompt": "remember I am vegetarian"}, headers=auth).get_json()
        assert body["status"] == "awaiting_confirmation"
        resp = client.post("/api/agent/approve", json={"approvalId": body["approval"]["id"],
                                                       "decision": "approve"}, headers=auth)
        assert resp.status_code == 202
        deadline = time.monotonic() + 60
        status = ""
        while time.monotonic() < deadline:
            snap = rt.runs.get_run(body["runId"])
            status = snap.run.status if snap else ""
            if status in ("completed", "failed"):
                break
            time.sleep(0.2)
        assert status == "completed"
        events = ndjson(client.get(f"/api/agent/runs/{body['runId']}/events?after=0", headers=auth).data)
        assert events[-1]["type"] == "result" and events[-1]["result"]["summary"] == "Noted."
        assert [m.text for m in rt.users.list_memories("alice")] == ["Alice is vegetarian"]
    finally:
        subscriber.delete_subscription(subscription=subscription)
        publisher.delete_topic(topic=topic)
        subscriber.close()
