"""Grants are the least ones: own identity per function, only the backend invokes HTTP functions."""

from __future__ import annotations

import json

import pytest
from agent_infra.config import CATALOG
from harness import ACCOUNT, PROJECT_NUMBER, STACKS, Declared, functions, of_type, sa_member, stack_config

PUBLIC = ("allUsers", "allAuthenticatedUsers")
PUBSUB_AGENT = f"serviceAccount:service-{PROJECT_NUMBER}@gcp-sa-pubsub.iam.gserviceaccount.com"


def grants(declared: list[Declared], kind: str) -> set[tuple[str, ...]]:
    """(resource-or-scope, role, member) of every grant of one IAM member type."""
    out: set[tuple[str, ...]] = set()
    for d in of_type(declared, kind):
        i = d.inputs
        scope = i.get("name") or i.get("topic") or i.get("secretId") or i.get("subscription") \
            or i.get("serviceAccountId") or i.get("project")
        out.add((scope, i["role"], i["member"]))
    return out


@pytest.mark.parametrize("stack", STACKS)
def test_nothing_is_public(stacks: dict[str, list[Declared]], stack: str) -> None:
    for d in stacks[stack]:
        text = json.dumps(d.inputs, default=repr)
        assert not any(p in text for p in PUBLIC), f"{d.name} mentions a public principal"


@pytest.mark.parametrize("stack", STACKS)
def test_only_additive_member_grants(stacks: dict[str, list[Declared]], stack: str) -> None:
    # Authoritative policies/bindings would remove grants this program does not own.
    iam_types = {d.typ for d in stacks[stack] if "iam" in d.typ.lower()}
    assert iam_types and all(t.endswith("Member") for t in iam_types), iam_types


@pytest.mark.parametrize("stack", STACKS)
def test_each_function_runs_as_its_own_account(stacks: dict[str, list[Declared]], stack: str) -> None:
    declared = stacks[stack]
    emails = [fn["serviceConfig"]["serviceAccountEmail"] for fn in functions(declared).values()]
    assert len(set(emails)) == len(CATALOG)
    assert all("compute@developer" not in e for e in emails)
    assert len(of_type(declared, ACCOUNT)) == len(CATALOG) + 2  # + push identity, builder


@pytest.mark.parametrize("stack", STACKS)
def test_project_roles_are_least(stacks: dict[str, list[Declared]], stack: str) -> None:
    declared = stacks[stack]
    project = stack_config(stack)["gcp:project"]
    want = {(project, "roles/datastore.user", sa_member(declared, f"sa-{s.name}")) for s in CATALOG}
    builder = sa_member(declared, "sa-build")
    want |= {(project, r, builder) for r in
             ("roles/logging.logWriter", "roles/artifactregistry.writer", "roles/storage.objectViewer")}
    assert grants(declared, "gcp:projects/iAMMember:IAMMember") == want


@pytest.mark.parametrize("stack", STACKS)
def test_invokers(stacks: dict[str, list[Declared]], stack: str) -> None:
    declared = stacks[stack]
    backend = f"serviceAccount:{stack_config(stack)['agent-runtime:backendServiceAccount']}"
    got = grants(declared, "gcp:cloudrunv2/serviceIamMember:ServiceIamMember")
    want = {(f"agent-{s.name}", "roles/run.invoker",
             sa_member(declared, "sa-resume-push") if s.trigger == "pubsub" else backend) for s in CATALOG}
    assert got == want


@pytest.mark.parametrize("stack", STACKS)
def test_only_dispatching_functions_publish_to_resume(stacks: dict[str, list[Declared]], stack: str) -> None:
    declared = stacks[stack]
    got = grants(declared, "gcp:pubsub/topicIAMMember:TopicIAMMember")
    want = {("agent-resume", "roles/pubsub.publisher", sa_member(declared, f"sa-{n}"))
            for n in ("run", "stream", "approve", "resume")}
    want.add(("agent-resume-dead-letter", "roles/pubsub.publisher", PUBSUB_AGENT))
    assert got == want


@pytest.mark.parametrize("stack", STACKS)
def test_secret_readers(stacks: dict[str, list[Declared]], stack: str) -> None:
    declared = stacks[stack]
    got = grants(declared, "gcp:secretmanager/secretIamMember:SecretIamMember")
    gemini, creds = "agent-gemini-api-key", "agent-credentials-encryption-key"
    role = "roles/secretmanager.secretAccessor"
    want = {(gemini, role, sa_member(declared, f"sa-{n}")) for n in ("run", "stream", "resume", "goals")}
    want |= {(creds, role, sa_member(declared, f"sa-{n}")) for n in ("run", "stream", "resume")}
    assert got == want


@pytest.mark.parametrize("stack", STACKS)
def test_pubsub_agent_grants_are_scoped(stacks: dict[str, list[Declared]], stack: str) -> None:
    declared = stacks[stack]
    assert grants(declared, "gcp:pubsub/subscriptionIAMMember:SubscriptionIAMMember") == {
        ("agent-resume-push", "roles/pubsub.subscriber", PUBSUB_AGENT)}
    pusher = sa_member(declared, "sa-resume-push").removeprefix("serviceAccount:")
    project = stack_config(stack)["gcp:project"]
    assert grants(declared, "gcp:serviceaccount/iAMMember:IAMMember") == {
        (f"projects/{project}/serviceAccounts/{pusher}", "roles/iam.serviceAccountTokenCreator", PUBSUB_AGENT)}
