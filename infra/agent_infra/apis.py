"""The Google Cloud APIs the system uses, enabled in the environment's project."""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from agent_infra.config import StackConfig

APIS = (
    "artifactregistry.googleapis.com",
    "cloudbuild.googleapis.com",
    "cloudfunctions.googleapis.com",
    "cloudscheduler.googleapis.com",
    "cloudtrace.googleapis.com",
    "compute.googleapis.com",
    "firestore.googleapis.com",
    "iam.googleapis.com",
    "iamcredentials.googleapis.com",
    "iap.googleapis.com",
    "logging.googleapis.com",
    "monitoring.googleapis.com",
    "pubsub.googleapis.com",
    "run.googleapis.com",
    "secretmanager.googleapis.com",
    "storage.googleapis.com",
)


def enable_apis(cfg: StackConfig) -> dict[str, pulumi.Resource]:
    """Enable every API (keyed by service name); destroying the stack leaves them enabled."""
    return {
        api: gcp.projects.Service(f"api-{api.split('.')[0]}", project=cfg.project, service=api,
                                  disable_on_destroy=False, disable_dependent_services=False)
        for api in APIS
    }
