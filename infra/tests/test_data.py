"""Firestore indexes and TTL policies, and the resume topic's delivery path."""

from __future__ import annotations

import pytest
from agent_infra.database import INDEXES, TTL_COLLECTIONS
from harness import STACKS, Declared, functions, named, of_type, sa_member


@pytest.mark.parametrize("stack", STACKS)
def test_composite_indexes(stacks: dict[str, list[Declared]], stack: str) -> None:
    got = {(i.inputs["collection"], i.inputs["queryScope"],
            tuple((f["fieldPath"], f["order"]) for f in i.inputs["fields"]))
           for i in of_type(stacks[stack], "gcp:firestore/index:Index")}
    # Which indexes the queries need: test_indexes.py (derived from the runtime's source).
    assert got == {(s.collection, s.scope, s.fields) for s in INDEXES}
    assert all(len(fields) >= 2 for _, _, fields in got)


@pytest.mark.parametrize("stack", STACKS)
def test_ttl_policies_on_expire_at(stacks: dict[str, list[Declared]], stack: str) -> None:
    fields = of_type(stacks[stack], "gcp:firestore/field:Field")
    assert {f.inputs["collection"] for f in fields} == set(TTL_COLLECTIONS) >= {
        "events", "audit", "agentApprovals", "idempotencyKeys"}
    for f in fields:
        assert f.inputs["field"] == "expireAt"
        assert "ttlConfig" in f.inputs


@pytest.mark.parametrize("stack", STACKS)
def test_database_is_native_and_kept_on_destroy(stacks: dict[str, list[Declared]], stack: str) -> None:
    db = named(stacks[stack], "firestore").inputs
    assert (db["name"], db["type"], db["deletionPolicy"]) == ("(default)", "FIRESTORE_NATIVE", "ABANDON")


@pytest.mark.parametrize("stack", STACKS)
def test_resume_push_subscription(stacks: dict[str, list[Declared]], stack: str) -> None:
    declared = stacks[stack]
    push = named(declared, "resume-push").inputs
    topic = named(declared, "resume-topic").inputs["name"]
    dead = named(declared, "resume-dead-letter").inputs["name"]
    project = push["project"]
    resume = functions(declared)["agent-resume"]["serviceConfig"]
    assert push["topic"] == topic
    # The topic in the push path becomes the CloudEvent's source in functions-framework.
    assert push["pushConfig"]["pushEndpoint"].endswith(f"/projects/{project}/topics/{topic}")
    oidc = push["pushConfig"]["oidcToken"]
    assert f"serviceAccount:{oidc['serviceAccountEmail']}" == sa_member(declared, "sa-resume-push")
    assert push["pushConfig"]["pushEndpoint"].startswith(oidc["audience"])
    assert push["deadLetterPolicy"]["deadLetterTopic"] == f"projects/{project}/topics/{dead}"
    assert 5 <= push["deadLetterPolicy"]["maxDeliveryAttempts"] <= 100
    assert push["retryPolicy"] == {"minimumBackoff": "10s", "maximumBackoff": "600s"}
    assert push["ackDeadlineSeconds"] == min(600, resume["timeoutSeconds"])
    assert push["expirationPolicy"] == {"ttl": ""}
    assert resume["ingressSettings"] == "ALLOW_INTERNAL_ONLY"
    # Dead letters are kept for inspection rather than published into the void.
    assert named(declared, "resume-dead-letter-sub").inputs["topic"] == dead
    assert len(of_type(declared, "gcp:pubsub/subscription:Subscription")) == 2
