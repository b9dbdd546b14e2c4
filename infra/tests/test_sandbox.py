"""The sandbox service (docs/workspaces.md) per environment: a second-generation Cloud Run service
from the built image, its snapshot bucket, and IAM: the tool-running functions may invoke it and
know its URL; it may only use its bucket (no Firestore, no Secret Manager, no project role)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agent_infra.config import SANDBOX_CALLERS
from agent_infra.sandbox import INVOKER_ROLE, SERVICE_NAME, SNAPSHOT_ROLE
from harness import SANDBOX_IMAGE, STACKS, Declared, deploy, functions, named, of_type, sa_member, stack_config

SERVICE = "gcp:cloudrunv2/service:Service"


def service(declared: list[Declared]) -> dict:  # type: ignore[type-arg]
    (found,) = of_type(declared, SERVICE)
    return found.inputs


@pytest.mark.parametrize("stack", STACKS)
def test_one_gen2_service_per_stack_runs_the_built_image(stacks: dict[str, list[Declared]], stack: str) -> None:
    declared = stacks[stack]
    spec = stack_config(stack)["agent-runtime:sandbox"]
    inputs = service(declared)
    assert inputs["name"] == SERVICE_NAME and inputs["project"] == stack_config(stack)["gcp:project"]
    template = inputs["template"]
    assert template["executionEnvironment"] == "EXECUTION_ENVIRONMENT_GEN2"  # namespaces for bubblewrap
    assert template["scaling"]["maxInstanceCount"] == 1
    (container,) = template["containers"]
    assert container["image"] == SANDBOX_IMAGE
    assert container["resources"]["limits"] == {"cpu": spec["cpu"], "memory": spec["memory"]}
    env = {e["name"]: e["value"] for e in container["envs"]}
    assert env["SANDBOX_AUTH"] == "cloud-run-iam" and "SANDBOX_KEY" not in env
    assert env["SANDBOX_SNAPSHOT_BUCKET"] == named(declared, "workspace-snapshots").inputs["name"]
    assert not any(word in name for name in env for word in ("SECRET", "TOKEN", "PASSWORD"))


@pytest.mark.parametrize("stack", STACKS)
def test_the_service_has_its_own_identity_and_only_its_bucket(stacks: dict[str, list[Declared]], stack: str) -> None:
    declared = stacks[stack]
    identity = sa_member(declared, "sa-sandbox")
    assert service(declared)["template"]["serviceAccount"] == identity.removeprefix("serviceAccount:")
    mentions = [d for d in declared if identity in json.dumps(d.inputs, default=str) and d.typ != SERVICE]
    assert [(d.typ, d.inputs["role"]) for d in mentions] == [
        ("gcp:storage/bucketIAMMember:BucketIAMMember", SNAPSHOT_ROLE)]  # no Firestore, no secrets, no project role
    bucket = named(declared, "workspace-snapshots").inputs
    assert bucket["publicAccessPrevention"] == "enforced" and bucket["uniformBucketLevelAccess"] is True
    days = stack_config(stack)["agent-runtime:sandbox"]["snapshotRetentionDays"]
    assert bucket["lifecycleRules"][0]["condition"]["age"] == days


@pytest.mark.parametrize("stack", STACKS)
def test_only_the_tool_running_functions_may_invoke_it_and_know_it(stacks: dict[str, list[Declared]],
                                                                   stack: str) -> None:
    declared = stacks[stack]
    invokers = [d for d in of_type(declared, "gcp:cloudrunv2/serviceIamMember:ServiceIamMember")
                if d.inputs["name"] == SERVICE_NAME]
    assert invokers
    assert {d.inputs["role"] for d in invokers} == {INVOKER_ROLE}
    assert {d.inputs["member"] for d in invokers} == {sa_member(declared, f"sa-{name}") for name in SANDBOX_CALLERS}
    for name, fn in functions(declared).items():
        env = fn["serviceConfig"]["environmentVariables"]
        if name.removeprefix("agent-") in SANDBOX_CALLERS:
            assert env["SANDBOX_URL"] == f"https://{SERVICE_NAME}-mock.a.run.app"
        else:
            assert "SANDBOX_URL" not in env
        assert "SANDBOX_KEY" not in env


def test_more_than_one_instance_is_refused(bundle_dir: Path) -> None:
    box = {**stack_config("dev")["agent-runtime:sandbox"], "maxInstances": 2}
    with pytest.raises(Exception, match="maxInstances must be 1"):
        deploy("dev", bundle_dir, {"agent-runtime:sandbox": box})
