"""The sandbox service (sandbox/, docs/workspaces.md): a Cloud Run service per environment.

Scripts chosen by a model run there, under bubblewrap, never in a function. The service:

- runs the image built from ``sandbox/Dockerfile`` (its reference, pinned by digest, is read from
  ``sandbox.imageFile`` as the host agent's is), in the **second generation** execution
  environment (a microVM with full Linux compatibility: the namespaces bubblewrap creates; the
  first generation, gVisor, is not relied on);
- runs as its own service account, which may only read and write objects of its snapshot bucket:
  no Firestore role, no Secret Manager access, no project role at all;
- admits only callers with ``roles/run.invoker`` on it: the accounts of the functions that run the
  workspace tools or destroy workspaces (``SANDBOX_CALLERS``); the functions send an ID token
  (``shared/connectors/sandbox.py``) and the service trusts the platform's check
  (``SANDBOX_AUTH=cloud-run-iam``);
- keeps workspaces in memory (tmpfs, counted in the instance's memory) and snapshots them to the
  bucket, whose objects expire after ``snapshotRetentionDays``; one instance at most, since each
  instance caches the workspaces it served.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

from agent_infra.config import SANDBOX_CALLERS, StackConfig
from agent_infra.hostagent import image_reference
from agent_infra.iam import Accounts, member

SERVICE_NAME = "agent-sandbox"
ACCOUNT_ID = "agent-sandbox"
SNAPSHOT_ROLE = "roles/storage.objectUser"
INVOKER_ROLE = "roles/run.invoker"
PORT = 8080


@dataclass(frozen=True)
class SandboxResources:
    account: gcp.serviceaccount.Account
    snapshots: gcp.storage.Bucket
    service: gcp.cloudrunv2.Service
    grants: list[pulumi.Resource]

    @property
    def url(self) -> pulumi.Output[str]:
        return self.service.uri


def create_sandbox(cfg: StackConfig, depends_on: list[pulumi.Resource]) -> SandboxResources:
    spec = cfg.sandbox
    opts = pulumi.ResourceOptions(depends_on=depends_on)
    labels = {"app": "agent-runtime", "env": cfg.environment}
    account = gcp.serviceaccount.Account("sa-sandbox", project=cfg.project, account_id=ACCOUNT_ID,
                                         display_name=f"Agent Runtime {cfg.environment}: sandbox service", opts=opts)
    snapshots = gcp.storage.Bucket(
        "workspace-snapshots", project=cfg.project, name=f"{cfg.project}-workspace-snapshots", location=cfg.region,
        uniform_bucket_level_access=True, public_access_prevention="enforced", labels=labels,
        force_destroy=not cfg.retention.delete_protection,
        lifecycle_rules=[gcp.storage.BucketLifecycleRuleArgs(
            action=gcp.storage.BucketLifecycleRuleActionArgs(type="Delete"),
            condition=gcp.storage.BucketLifecycleRuleConditionArgs(age=spec.snapshot_retention_days))],
        opts=opts)
    grants: list[pulumi.Resource] = [gcp.storage.BucketIAMMember(
        "sandbox-writes-snapshots", bucket=snapshots.name, role=SNAPSHOT_ROLE, member=member(account))]
    env = {"SANDBOX_AUTH": "cloud-run-iam", "SANDBOX_SNAPSHOT_BUCKET": snapshots.name,
           "SANDBOX_ROOT": "/var/lib/sandbox/workspaces", "SANDBOX_DISK_BYTES": str(spec.disk_bytes),
           "HOST": "0.0.0.0", "GOOGLE_CLOUD_PROJECT": cfg.project}
    service = gcp.cloudrunv2.Service(
        "sandbox", project=cfg.project, location=cfg.region, name=SERVICE_NAME, labels=labels,
        ingress="INGRESS_TRAFFIC_ALL", deletion_protection=cfg.retention.delete_protection,
        template=gcp.cloudrunv2.ServiceTemplateArgs(
            service_account=account.email, execution_environment="EXECUTION_ENVIRONMENT_GEN2",
            max_instance_request_concurrency=spec.concurrency, timeout="900s", labels=labels,
            scaling=gcp.cloudrunv2.ServiceTemplateScalingArgs(min_instance_count=0,
                                                              max_instance_count=spec.max_instances),
            containers=[gcp.cloudrunv2.ServiceTemplateContainerArgs(
                image=image_reference(spec.image_file, "sandbox", "scripts/sandbox_image.sh"),
                ports=gcp.cloudrunv2.ServiceTemplateContainerPortsArgs(container_port=PORT),
                envs=[gcp.cloudrunv2.ServiceTemplateContainerEnvArgs(name=k, value=v) for k, v in sorted(env.items())],
                resources=gcp.cloudrunv2.ServiceTemplateContainerResourcesArgs(
                    limits={"cpu": spec.cpu, "memory": spec.memory}))]),
        opts=pulumi.ResourceOptions(depends_on=[*depends_on, *grants]))
    return SandboxResources(account=account, snapshots=snapshots, service=service, grants=grants)


def grant_callers(cfg: StackConfig, sandbox: SandboxResources, accounts: Accounts) -> list[pulumi.Resource]:
    """``roles/run.invoker`` on the service for the functions that call it, and nobody else."""
    return [gcp.cloudrunv2.ServiceIamMember(
        f"sandbox-invoker-{name}", project=cfg.project, location=cfg.region, name=sandbox.service.name,
        role=INVOKER_ROLE, member=member(accounts.functions[name])) for name in SANDBOX_CALLERS]
