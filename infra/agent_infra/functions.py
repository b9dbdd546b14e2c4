"""The uploaded bundle and the Cloud Functions (gen2) built from it, one per catalog entry."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pulumi
import pulumi_gcp as gcp

from agent_infra.config import CATALOG, PYTHON_RUNTIME, SANDBOX_CALLERS, FunctionSpec, SecretName, StackConfig
from agent_infra.iam import Accounts
from agent_infra.secrets import secret_env

FUNCTION_PREFIX = "agent-"


def bundle_digest(bundle_dir: str) -> str:
    """A content hash of the bundle: a changed bundle gets a new object name, hence a new build."""
    root = Path(bundle_dir)
    if not (root / "main.py").is_file():
        raise ValueError(f"no bundle at {root.resolve()}: run scripts/bundle.sh (make bundle) first")
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def upload_bundle(cfg: StackConfig, accounts: Accounts, depends_on: list[pulumi.Resource],
                  ) -> tuple[gcp.storage.Bucket, gcp.storage.BucketObject]:
    bucket = gcp.storage.Bucket(
        "function-sources", project=cfg.project, name=f"{cfg.project}-agent-fn-sources", location=cfg.region,
        uniform_bucket_level_access=True, public_access_prevention="enforced", force_destroy=True,
        # Old bundles stay long enough to roll back by redeploying an earlier commit's stack.
        lifecycle_rules=[gcp.storage.BucketLifecycleRuleArgs(
            action=gcp.storage.BucketLifecycleRuleActionArgs(type="Delete"),
            condition=gcp.storage.BucketLifecycleRuleConditionArgs(age=90))],
        opts=pulumi.ResourceOptions(depends_on=depends_on))
    source = gcp.storage.BucketObject(
        "function-bundle", bucket=bucket.name, name=f"bundle-{bundle_digest(cfg.bundle_dir)}.zip",
        source=pulumi.FileArchive(cfg.bundle_dir))
    return bucket, source


def create_function(spec: FunctionSpec, cfg: StackConfig, accounts: Accounts,
                    bucket: gcp.storage.Bucket, source: gcp.storage.BucketObject,
                    secrets: dict[SecretName, gcp.secretmanager.Secret],
                    depends_on: list[pulumi.Resource],
                    sandbox_url: pulumi.Input[str] | None = None) -> gcp.cloudfunctionsv2.Function:
    scale = cfg.scaling[spec.name]
    env: dict[str, pulumi.Input[str]] = dict(cfg.function_env(spec))
    if sandbox_url is not None and spec.name in SANDBOX_CALLERS:
        env["SANDBOX_URL"] = sandbox_url  # reached with an ID token: no key
    builder_id = accounts.builder.name  # projects/P/serviceAccounts/EMAIL, the form build_config wants
    return gcp.cloudfunctionsv2.Function(
        f"fn-{spec.name}", project=cfg.project, location=cfg.region, name=f"{FUNCTION_PREFIX}{spec.name}",
        description=f"Agent Runtime ({cfg.environment}): {spec.route}",
        labels={"app": "agent-runtime", "env": cfg.environment},
        build_config=gcp.cloudfunctionsv2.FunctionBuildConfigArgs(
            runtime=PYTHON_RUNTIME, entry_point=spec.entry_point, service_account=builder_id,
            source=gcp.cloudfunctionsv2.FunctionBuildConfigSourceArgs(
                storage_source=gcp.cloudfunctionsv2.FunctionBuildConfigSourceStorageSourceArgs(
                    bucket=bucket.name, object=source.name))),
        service_config=gcp.cloudfunctionsv2.FunctionServiceConfigArgs(
            available_memory=scale.memory, available_cpu=scale.cpu, timeout_seconds=scale.timeout_s,
            min_instance_count=scale.min_instances, max_instance_count=scale.max_instances,
            max_instance_request_concurrency=scale.concurrency,
            environment_variables=env,
            secret_environment_variables=secret_env(spec, cfg, secrets),
            service_account_email=accounts.functions[spec.name].email,
            # resume is reached only by Pub/Sub push, which counts as internal traffic.
            ingress_settings="ALLOW_INTERNAL_ONLY" if spec.trigger == "pubsub" else "ALLOW_ALL",
            all_traffic_on_latest_revision=True),
        opts=pulumi.ResourceOptions(depends_on=depends_on))


def create_functions(cfg: StackConfig, accounts: Accounts, bucket: gcp.storage.Bucket,
                     source: gcp.storage.BucketObject, secrets: dict[SecretName, gcp.secretmanager.Secret],
                     depends_on: list[pulumi.Resource],
                     sandbox_url: pulumi.Input[str] | None = None) -> dict[str, gcp.cloudfunctionsv2.Function]:
    return {s.name: create_function(s, cfg, accounts, bucket, source, secrets, depends_on, sandbox_url)
            for s in CATALOG}
