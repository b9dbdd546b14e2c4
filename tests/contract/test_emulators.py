"""The emulator fixtures work with the real client libraries."""

from __future__ import annotations

import os

import pytest

from tests.emulators import TEST_PROJECT, Emulator, http_get


@pytest.mark.pubsub
def test_pubsub_emulator_publish_and_pull(pubsub_emulator: Emulator) -> None:
    from google.cloud import pubsub_v1

    assert os.environ["PUBSUB_EMULATOR_HOST"] == pubsub_emulator.host
    publisher = pubsub_v1.PublisherClient()
    subscriber = pubsub_v1.SubscriberClient()
    topic = publisher.topic_path(TEST_PROJECT, "emulator-check")
    subscription = subscriber.subscription_path(TEST_PROJECT, "emulator-check-pull")
    try:
        publisher.create_topic(name=topic)
        subscriber.create_subscription(name=subscription, topic=topic)
        publisher.publish(topic, b'{"runId": "r1"}', kind="resume").result(timeout=30)
        received = []
        for _ in range(20):  # pull may answer empty before the message is routed
            response = subscriber.pull(subscription=subscription, max_messages=1, timeout=30)
            received += response.received_messages
            if received:
                break
        assert len(received) == 1
        message = received[0].message
        assert (message.data, dict(message.attributes)) == (b'{"runId": "r1"}', {"kind": "resume"})
        subscriber.acknowledge(subscription=subscription, ack_ids=[received[0].ack_id])
    finally:
        subscriber.close()
        publisher.transport.close()


@pytest.mark.firestore
def test_firestore_emulator_answers(firestore_emulator: Emulator) -> None:
    assert os.environ["FIRESTORE_EMULATOR_HOST"] == firestore_emulator.host
    assert os.environ["GOOGLE_CLOUD_PROJECT"] == TEST_PROJECT
    assert http_get(f"http://{firestore_emulator.host}/") == (200, "Ok\n")
