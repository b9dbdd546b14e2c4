"""Secret Manager secrets and who may read them.

The values are added out of band (``gcloud secrets versions add``, see docs/deploying.md) so they
never enter Pulumi state or the repository; functions mount the ``latest`` version as secret
environment variables.
"""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from agent_infra.config import CATALOG, SECRET_ENV, FunctionSpec, SecretName, StackConfig
from agent_infra.iam import Accounts, member

SECRET_IDS: dict[SecretName, str] = {
    "gemini": "agent-gemini-api-key",
    "credentials": "agent-credentials-encryption-key",
    "google_oauth": "agent-google-oauth-client-secret",
}
# Pulumi logical names; docs/deploying.md targets them on a first deploy.
LOGICAL_NAMES: dict[SecretName, str] = {
    "gemini": "gemini-api-key",
    "credentials": "credentials-encryption-key",
    "google_oauth": "google-oauth-client-secret",
}
ACCESSOR_ROLE = "roles/secretmanager.secretAccessor"


def create_secrets(cfg: StackConfig, depends_on: list[pulumi.Resource]) -> dict[SecretName, gcp.secretmanager.Secret]:
    return {
        key: gcp.secretmanager.Secret(
            LOGICAL_NAMES[key], project=cfg.project, secret_id=secret_id,
            replication=gcp.secretmanager.SecretReplicationArgs(auto=gcp.secretmanager.SecretReplicationAutoArgs()),
            labels={"app": "agent-runtime", "env": cfg.environment},
            opts=pulumi.ResourceOptions(depends_on=depends_on, protect=cfg.retention.delete_protection))
        for key, secret_id in SECRET_IDS.items()
    }


def grant_access(secrets: dict[SecretName, gcp.secretmanager.Secret], accounts: Accounts) -> list[pulumi.Resource]:
    """Each function reads exactly the secrets its catalog entry lists."""
    return [
        gcp.secretmanager.SecretIamMember(f"{spec.name}-reads-{key}", project=secrets[key].project,
                                          secret_id=secrets[key].secret_id, role=ACCESSOR_ROLE,
                                          member=member(accounts.functions[spec.name]))
        for spec in CATALOG for key in spec.secrets
    ]


def secret_env(spec: FunctionSpec, cfg: StackConfig, secrets: dict[SecretName, gcp.secretmanager.Secret],
               ) -> list[gcp.cloudfunctionsv2.FunctionServiceConfigSecretEnvironmentVariableArgs]:
    return [
        gcp.cloudfunctionsv2.FunctionServiceConfigSecretEnvironmentVariableArgs(
            key=SECRET_ENV[key], project_id=cfg.project, secret=secrets[key].secret_id, version="latest")
        for key in spec.secrets
    ]
