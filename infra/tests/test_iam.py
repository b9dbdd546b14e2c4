"""Grants are the least ones: own identity per function, only the backend invokes HTTP functions."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from agent_infra.config import CATALOG, SANDBOX_CALLERS, FunctionSpec
from agent_infra.iam import function_project_roles
from harness import ACCOUNT, PROJECT_NUMBER, REPO, STACKS, Declared, functions, of_type, sa_member, stack_config

PUBLIC = ("allUsers", "allAuthenticatedUsers")
PUBSUB_AGENT = f"serviceAccount:service-{PROJECT_NUMBER}@gcp-sa-pubsub.iam.gserviceaccount.com"
IAP_AGENT = f"serviceAccount:service-{PROJECT_NUMBER}@gcp-sa-iap.iam.gserviceaccount.com"
# What each function does with Firestore, read from its code (see test_stateless_functions_...):
# runs and usage read, and write only the caller's request counter (the per-user request limit);
# goals writes only its model calls' usage-ledger entries.
FIRESTORE_ROLES = {
    "run": {"roles/datastore.user"},
    "stream": {"roles/datastore.user"},
    "runs": {"roles/datastore.user"},
    "approve": {"roles/datastore.user"},
    "resume": {"roles/datastore.user"},
    "goals": {"roles/datastore.user"},
    "integrations": {"roles/datastore.user"},
    "usage": {"roles/datastore.user"},
    "sessions": {"roles/datastore.user"},
    "a2a": {"roles/datastore.user"},
    "containers": {"roles/datastore.user"},
    "data": {"roles/datastore.user"},
    "admin": {"roles/datastore.user"},
}


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
    assert len(of_type(declared, ACCOUNT)) == len(CATALOG) + 4  # + push identity, builder, host agent job, sandbox


@pytest.mark.parametrize("stack", STACKS)
def test_project_roles_are_least(stacks: dict[str, list[Declared]], stack: str) -> None:
    declared = stacks[stack]
    project = stack_config(stack)["gcp:project"]
    assert set(FIRESTORE_ROLES) == {s.name for s in CATALOG}
    want = {(project, role, sa_member(declared, f"sa-{name}")) for name, roles in FIRESTORE_ROLES.items()
            for role in roles}
    builder = sa_member(declared, "sa-build")
    want |= {(project, r, builder) for r in
             ("roles/logging.logWriter", "roles/artifactregistry.writer", "roles/storage.objectViewer")}
    # every function writes its spans to Cloud Trace (issue 30; tests/test_observability.py)
    want |= {(project, "roles/cloudtrace.agent", sa_member(declared, f"sa-{s.name}")) for s in CATALOG}
    assert grants(declared, "gcp:projects/iAMMember:IAMMember") == want


def test_project_roles_derive_from_the_catalog() -> None:
    for spec in CATALOG:
        assert set(function_project_roles(spec)) == FIRESTORE_ROLES[spec.name], spec.name


def _module_file(module: str) -> Path | None:
    base = REPO / Path(*module.split("."))
    return next((f for f in (base.with_suffix(".py"), base / "__init__.py") if f.is_file()), None)


def imported_modules(module: str) -> set[str]:
    """Every module of this repository ``module`` may import (any import statement, lazy ones too)."""
    seen: set[str] = set()
    todo = [module]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        file = _module_file(name)
        if file is None:
            continue
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]  # parent packages run first
        package = parts if file.name == "__init__.py" else parts[:-1]
        for node in ast.walk(ast.parse(file.read_text())):
            if isinstance(node, ast.Import):
                todo += [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                anchor = package[: len(package) - node.level + 1] if node.level else []
                base = ".".join([*anchor, *([node.module] if node.module else [])])
                todo.append(base)
                todo += [f"{base}.{a.name}" for a in node.names if _module_file(f"{base}.{a.name}")]
    return seen


@pytest.mark.parametrize("spec", CATALOG, ids=lambda s: s.name)
def test_functions_without_a_firestore_role_never_import_the_store(spec: FunctionSpec) -> None:
    modules = imported_modules(f"functions.{spec.entry_point}")
    assert f"functions.{spec.entry_point}" in modules and len(modules) > 3
    store = {m for m in modules if m.startswith(("shared.state", "shared.runtime", "google.cloud.firestore"))}
    if spec.firestore == "none":
        assert not store, f"{spec.name} has no Firestore role but imports {sorted(store)}"
    else:
        assert store, f"{spec.name} never imports the store: declare firestore='none'"


@pytest.mark.parametrize("stack", STACKS)
def test_invokers(stacks: dict[str, list[Declared]], stack: str) -> None:
    declared = stacks[stack]
    backend = f"serviceAccount:{stack_config(stack)['agent-runtime:backendServiceAccount']}"
    got = grants(declared, "gcp:cloudrunv2/serviceIamMember:ServiceIamMember")
    want = {(f"agent-{s.name}", "roles/run.invoker",
             sa_member(declared, "sa-resume-push") if s.trigger == "pubsub" else backend) for s in CATALOG}
    # The sandbox service: only the functions that run the workspace tools (tests/test_sandbox.py).
    want |= {("agent-sandbox", "roles/run.invoker", sa_member(declared, f"sa-{n}")) for n in SANDBOX_CALLERS}
    # The one endpoint: IAP's service agent calls every function behind it (tests/test_endpoint.py).
    want |= {(f"agent-{s.name}", "roles/run.invoker", IAP_AGENT) for s in CATALOG
             if s.trigger == "http" and s.name != "goals"}
    # The stack's admin service accounts invoke the admin API's function only.
    want |= {("agent-admin", "roles/run.invoker", f"serviceAccount:{a}")
             for a in stack_config(stack)["agent-runtime:admin"]["serviceAccounts"]}
    assert got == want
    assert ("agent-integrations", "roles/run.invoker", backend) in got


@pytest.mark.parametrize("stack", STACKS)
def test_only_dispatching_functions_publish_to_resume(stacks: dict[str, list[Declared]], stack: str) -> None:
    declared = stacks[stack]
    got = grants(declared, "gcp:pubsub/topicIAMMember:TopicIAMMember")
    want = {("agent-resume", "roles/pubsub.publisher", sa_member(declared, f"sa-{n}"))
            for n in ("run", "stream", "approve", "resume", "sessions", "a2a")}
    want.add(("agent-resume-dead-letter", "roles/pubsub.publisher", PUBSUB_AGENT))
    assert got == want


@pytest.mark.parametrize("stack", STACKS)
def test_secret_readers(stacks: dict[str, list[Declared]], stack: str) -> None:
    declared = stacks[stack]
    got = grants(declared, "gcp:secretmanager/secretIamMember:SecretIamMember")
    gemini, creds = "agent-gemini-api-key", "agent-credentials-encryption-key"
    role = "roles/secretmanager.secretAccessor"
    oauth = "agent-google-oauth-client-secret"
    want = {(gemini, role, sa_member(declared, f"sa-{n}"))
            for n in ("run", "stream", "resume", "goals", "sessions", "a2a")}
    # sessions: a session's repository context reads the caller's GitHub token (issue 35).
    # approve: an approval's detail lists the user's own MCP servers' tools (tests/infra/test_function_secrets.py).
    want |= {(creds, role, sa_member(declared, f"sa-{n}"))
             for n in ("run", "stream", "resume", "integrations", "a2a", "sessions", "approve")}
    # The loop runs connector tools in run, stream and resume: they refresh Google tokens.
    want |= {(oauth, role, sa_member(declared, f"sa-{n}")) for n in ("run", "stream", "resume", "a2a")}
    want.add((gemini, role, sa_member(declared, "sa-host-agent")))  # the host agent job's LLM planner
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
