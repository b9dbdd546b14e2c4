"""The host agent (hostagent/, seed 002): a Cloud Run job, one execution per session.

The host agent is a long-lived WebSocket client, not a request handler, so it runs as a Cloud Run
**job** (docs/host-protocol.md, "Deployment"): the backend starts one execution per session with
the session's arguments as overrides (``jobs.run``), which it may do on this job only
(``roles/run.jobsExecutorWithOverrides``). The job runs as its own service account, which reads
only the Gemini key (Secret Manager, mounted as ``GEMINI_API_KEY``) and writes the sessions' JSONL
logs to a bucket mounted at ``/logs``; it has no Firestore role. The image is built by
``scripts/host_agent_image.sh`` into the stack's Artifact Registry repository; its reference (with
digest) is read from ``hostAgent.imageFile``, as the functions' bundle is read from ``bundleDir``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pulumi
import pulumi_gcp as gcp

from agent_infra.config import SECRET_ENV, SecretName, StackConfig
from agent_infra.iam import member

JOB_NAME = "agent-host-agent"
ACCOUNT_ID = "agent-host-agent"
REPOSITORY_ID = "agent-runtime"
LOG_MOUNT = "/logs"
SECRETS: tuple[SecretName, ...] = ("gemini",)
EXECUTOR_ROLE = "roles/run.jobsExecutorWithOverrides"
LOG_WRITER_ROLE = "roles/storage.objectUser"


def image_reference(image_file: str, what: str = "host agent", script: str = "scripts/host_agent_image.sh") -> str:
    """The image to run, as written by ``script`` (``REGISTRY/IMAGE@sha256:...``)."""
    path = Path(image_file)
    if not path.is_file():
        raise ValueError(f"no {what} image reference at {path.resolve()}: run {script} first")
    ref = path.read_text().strip()
    if "@sha256:" not in ref:
        raise ValueError(f"{path}: expected an image reference pinned by digest (IMAGE@sha256:...), got {ref!r}")
    return ref


@dataclass(frozen=True)
class HostAgentResources:
    account: gcp.serviceaccount.Account
    repository: gcp.artifactregistry.Repository
    logs: gcp.storage.Bucket
    job: gcp.cloudrunv2.Job
    grants: list[pulumi.Resource]


def create_host_agent(cfg: StackConfig, secrets: dict[SecretName, gcp.secretmanager.Secret],
                      depends_on: list[pulumi.Resource]) -> HostAgentResources:
    spec = cfg.host_agent
    opts = pulumi.ResourceOptions(depends_on=depends_on)
    labels = {"app": "agent-runtime", "env": cfg.environment}
    account = gcp.serviceaccount.Account("sa-host-agent", project=cfg.project, account_id=ACCOUNT_ID,
                                         display_name=f"Agent Runtime {cfg.environment}: host agent job", opts=opts)
    repository = gcp.artifactregistry.Repository(
        "images", project=cfg.project, location=cfg.region, repository_id=REPOSITORY_ID, format="DOCKER",
        description="Agent Runtime images (the host agent)", labels=labels, opts=opts)
    logs = gcp.storage.Bucket(
        "host-agent-logs", project=cfg.project, name=f"{cfg.project}-host-agent-logs", location=cfg.region,
        uniform_bucket_level_access=True, public_access_prevention="enforced", labels=labels,
        force_destroy=not cfg.retention.delete_protection,
        lifecycle_rules=[gcp.storage.BucketLifecycleRuleArgs(
            action=gcp.storage.BucketLifecycleRuleActionArgs(type="Delete"),
            condition=gcp.storage.BucketLifecycleRuleConditionArgs(age=spec.log_retention_days))],
        opts=opts)
    grants: list[pulumi.Resource] = [
        gcp.storage.BucketIAMMember("host-agent-writes-logs", bucket=logs.name, role=LOG_WRITER_ROLE,
                                    member=member(account)),
        *[gcp.secretmanager.SecretIamMember(f"host-agent-reads-{key}", project=secrets[key].project,
                                            secret_id=secrets[key].secret_id,
                                            role="roles/secretmanager.secretAccessor", member=member(account))
          for key in SECRETS],
    ]
    env = {**spec.env, "GOOGLE_CLOUD_PROJECT": cfg.project}
    envs = [gcp.cloudrunv2.JobTemplateTemplateContainerEnvArgs(name=k, value=v) for k, v in sorted(env.items())]
    envs += [gcp.cloudrunv2.JobTemplateTemplateContainerEnvArgs(
        name=SECRET_ENV[key], value_source=gcp.cloudrunv2.JobTemplateTemplateContainerEnvValueSourceArgs(
            secret_key_ref=gcp.cloudrunv2.JobTemplateTemplateContainerEnvValueSourceSecretKeyRefArgs(
                secret=secrets[key].secret_id, version="latest"))) for key in SECRETS]
    job = gcp.cloudrunv2.Job(
        "host-agent", project=cfg.project, location=cfg.region, name=JOB_NAME, labels=labels,
        deletion_protection=cfg.retention.delete_protection,
        template=gcp.cloudrunv2.JobTemplateArgs(
            task_count=1, parallelism=1, labels=labels,
            template=gcp.cloudrunv2.JobTemplateTemplateArgs(
                service_account=account.email, max_retries=0,  # a session is not replayed
                timeout=f"{spec.timeout_s}s", execution_environment="EXECUTION_ENVIRONMENT_GEN2",
                containers=[gcp.cloudrunv2.JobTemplateTemplateContainerArgs(
                    image=image_reference(spec.image_file), envs=envs,
                    resources=gcp.cloudrunv2.JobTemplateTemplateContainerResourcesArgs(
                        limits={"cpu": spec.cpu, "memory": spec.memory}),
                    volume_mounts=[gcp.cloudrunv2.JobTemplateTemplateContainerVolumeMountArgs(
                        name="logs", mount_path=LOG_MOUNT)])],
                volumes=[gcp.cloudrunv2.JobTemplateTemplateVolumeArgs(
                    name="logs", gcs=gcp.cloudrunv2.JobTemplateTemplateVolumeGcsArgs(bucket=logs.name))]),
        ),
        # The job's identity must read its secret and write its logs before an execution starts.
        opts=pulumi.ResourceOptions(depends_on=[*depends_on, repository, *grants]))
    grants.append(gcp.cloudrunv2.JobIamMember(
        "host-agent-executor", project=cfg.project, location=cfg.region, name=job.name, role=EXECUTOR_ROLE,
        member=f"serviceAccount:{cfg.backend_invoker}"))
    return HostAgentResources(account=account, repository=repository, logs=logs, job=job, grants=grants)
