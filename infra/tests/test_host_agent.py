"""The host agent runs as a Cloud Run job per environment, with the least it needs."""

from __future__ import annotations

from pathlib import Path

import pytest
from agent_infra.hostagent import EXECUTOR_ROLE, JOB_NAME, LOG_MOUNT, LOG_WRITER_ROLE
from harness import IMAGE, STACKS, Declared, deploy, named, of_type, sa_member, stack_config

JOB = "gcp:cloudrunv2/job:Job"


def job(declared: list[Declared]) -> dict:  # type: ignore[type-arg]
    (found,) = of_type(declared, JOB)
    return found.inputs


@pytest.mark.parametrize("stack", STACKS)
def test_one_job_per_stack_runs_the_built_image(stacks: dict[str, list[Declared]], stack: str) -> None:
    declared = stacks[stack]
    spec = stack_config(stack)["agent-runtime:hostAgent"]
    inputs = job(declared)
    assert inputs["name"] == JOB_NAME and inputs["location"] == stack_config(stack)["gcp:region"]
    assert inputs["project"] == stack_config(stack)["gcp:project"]
    task = inputs["template"]["template"]
    (container,) = task["containers"]
    assert container["image"] == IMAGE  # pinned by digest, read from the file the image step wrote
    assert container["resources"]["limits"] == {"cpu": spec["cpu"], "memory": spec["memory"]}
    assert task["timeout"] == f"{spec['timeoutS']}s" and task["maxRetries"] == 0
    assert inputs["template"]["taskCount"] == 1


@pytest.mark.parametrize("stack", STACKS)
def test_the_job_reads_only_the_gemini_key_from_secret_manager(stacks: dict[str, list[Declared]], stack: str) -> None:
    declared = stacks[stack]
    (container,) = job(declared)["template"]["template"]["containers"]
    secret_envs = {e["name"]: e["valueSource"]["secretKeyRef"] for e in container["envs"] if "valueSource" in e}
    assert secret_envs == {"GEMINI_API_KEY": {"secret": named(declared, "gemini-api-key").inputs["secretId"],
                                              "version": "latest"}}
    plain = {e["name"]: e["value"] for e in container["envs"] if "value" in e}
    assert plain == {**stack_config(stack)["agent-runtime:hostAgent"]["env"],
                     "GOOGLE_CLOUD_PROJECT": stack_config(stack)["gcp:project"]}
    assert not any(word in name for name in plain for word in ("KEY", "SECRET", "TOKEN"))


@pytest.mark.parametrize("stack", STACKS)
def test_the_job_has_its_own_identity_and_least_grants(stacks: dict[str, list[Declared]], stack: str) -> None:
    declared = stacks[stack]
    identity = sa_member(declared, "sa-host-agent")
    assert job(declared)["template"]["template"]["serviceAccount"] == identity.removeprefix("serviceAccount:")
    project_grants = [d for d in of_type(declared, "gcp:projects/iAMMember:IAMMember")
                      if d.inputs["member"] == identity]
    assert project_grants == []  # no Firestore, no project-wide role
    (logs,) = [d for d in of_type(declared, "gcp:storage/bucketIAMMember:BucketIAMMember")
               if d.inputs["member"] == identity]
    assert (logs.inputs["role"], logs.inputs["member"]) == (LOG_WRITER_ROLE, identity)
    (executor,) = of_type(declared, "gcp:cloudrunv2/jobIamMember:JobIamMember")
    backend = f"serviceAccount:{stack_config(stack)['agent-runtime:backendServiceAccount']}"
    assert (executor.inputs["name"], executor.inputs["role"], executor.inputs["member"]) == (
        JOB_NAME, EXECUTOR_ROLE, backend)


@pytest.mark.parametrize("stack", STACKS)
def test_session_logs_go_to_a_private_bucket_with_retention(stacks: dict[str, list[Declared]], stack: str) -> None:
    declared = stacks[stack]
    bucket = named(declared, "host-agent-logs").inputs
    assert bucket["publicAccessPrevention"] == "enforced" and bucket["uniformBucketLevelAccess"] is True
    days = stack_config(stack)["agent-runtime:hostAgent"]["logRetentionDays"]
    assert bucket["lifecycleRules"][0]["condition"]["age"] == days
    task = job(declared)["template"]["template"]
    assert task["volumes"] == [{"name": "logs", "gcs": {"bucket": bucket["name"]}}]
    assert task["containers"][0]["volumeMounts"] == [{"name": "logs", "mountPath": LOG_MOUNT}]
    repo = named(declared, "images").inputs
    assert repo["format"] == "DOCKER" and repo["location"] == stack_config(stack)["gcp:region"]


def test_production_keeps_logs_longer_and_protects_the_job(stacks: dict[str, list[Declared]]) -> None:
    days = {s: named(stacks[s], "host-agent-logs").inputs["lifecycleRules"][0]["condition"]["age"] for s in STACKS}
    assert days["dev"] < days["staging"] < days["prod"]
    assert job(stacks["prod"])["deletionProtection"] is True and job(stacks["dev"])["deletionProtection"] is False


def test_a_missing_image_reference_is_refused(bundle_dir: Path, tmp_path: Path) -> None:
    spec = {**stack_config("dev")["agent-runtime:hostAgent"], "imageFile": str(tmp_path / "none.txt")}
    with pytest.raises(Exception, match="no host agent image reference"):
        deploy("dev", bundle_dir, {"agent-runtime:hostAgent": spec})
    unpinned = tmp_path / "tag.txt"
    unpinned.write_text("europe-west1-docker.pkg.dev/p/agent-runtime/host-agent:latest\n")
    with pytest.raises(Exception, match="pinned by digest"):
        deploy("dev", bundle_dir, {"agent-runtime:hostAgent": {**spec, "imageFile": str(unpinned)}})


def test_the_job_env_is_limited_to_model_settings(bundle_dir: Path) -> None:
    spec = stack_config("dev")["agent-runtime:hostAgent"]
    with pytest.raises(Exception, match=r"hostAgent\.env may only set"):
        deploy("dev", bundle_dir, {"agent-runtime:hostAgent": {**spec, "env": {"GEMINI_API_KEY": "x"}}})
