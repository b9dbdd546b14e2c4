"""Service accounts and their grants: each function gets its own identity and only what it needs.

Every grant is a non-authoritative ``*IamMember`` so the program never removes bindings it does
not own. Firestore has no per-collection IAM, so a function's Firestore role follows what its
catalog entry says it does: ``roles/datastore.user`` (the narrowest that writes documents) for
writers, ``roles/datastore.viewer`` for readers, nothing for functions that never use the store.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

from agent_infra.config import CATALOG, FirestoreAccess, FunctionSpec, StackConfig

FIRESTORE_ROLES: dict[FirestoreAccess, tuple[str, ...]] = {
    "none": (),
    "read": ("roles/datastore.viewer",),
    "write": ("roles/datastore.user",),
}
# What a gen2 build needs: write logs, push the image, read the uploaded source.
BUILDER_PROJECT_ROLES = ("roles/logging.logWriter", "roles/artifactregistry.writer", "roles/storage.objectViewer")
INVOKER_ROLE = "roles/run.invoker"
TRACE_ROLE = "roles/cloudtrace.agent"


@dataclass(frozen=True)
class Accounts:
    functions: dict[str, gcp.serviceaccount.Account]
    pusher: gcp.serviceaccount.Account
    builder: gcp.serviceaccount.Account


def member(account: gcp.serviceaccount.Account) -> pulumi.Output[str]:
    return account.email.apply(lambda email: f"serviceAccount:{email}")


def create_accounts(cfg: StackConfig, depends_on: list[pulumi.Resource]) -> Accounts:
    opts = pulumi.ResourceOptions(depends_on=depends_on)

    def account(key: str, account_id: str, what: str) -> gcp.serviceaccount.Account:
        return gcp.serviceaccount.Account(f"sa-{key}", project=cfg.project, account_id=account_id,
                                          display_name=f"Agent Runtime {cfg.environment}: {what}", opts=opts)

    return Accounts(
        functions={s.name: account(s.name, f"agent-fn-{s.name}", f"{s.name} function") for s in CATALOG},
        pusher=account("resume-push", "agent-resume-push", "Pub/Sub push identity for resume"),
        builder=account("build", "agent-fn-build", "function image builds"),
    )


def function_project_roles(spec: FunctionSpec) -> tuple[str, ...]:
    """The project roles of one function's service account, from its catalog entry."""
    return FIRESTORE_ROLES[spec.firestore]


def grant_project_roles(cfg: StackConfig, accounts: Accounts) -> list[pulumi.Resource]:
    grants: list[pulumi.Resource] = []
    for spec in CATALOG:
        for role in function_project_roles(spec):
            grants.append(gcp.projects.IAMMember(f"{spec.name}-{role.split('/')[1]}", project=cfg.project,
                                                 role=role, member=member(accounts.functions[spec.name])))
    if cfg.tracing.exporter == "gcp_trace":  # every function may write its spans to Cloud Trace
        for spec in CATALOG:
            grants.append(gcp.projects.IAMMember(f"{spec.name}-{TRACE_ROLE.split('/')[1]}", project=cfg.project,
                                                 role=TRACE_ROLE, member=member(accounts.functions[spec.name])))
    for role in BUILDER_PROJECT_ROLES:
        grants.append(gcp.projects.IAMMember(f"build-{role.split('/')[1]}", project=cfg.project,
                                             role=role, member=member(accounts.builder)))
    return grants


def grant_invokers(cfg: StackConfig, functions: dict[str, gcp.cloudfunctionsv2.Function],
                   accounts: Accounts) -> dict[str, pulumi.Resource]:
    """The backend may invoke the HTTP functions; only the push identity may invoke resume; the
    stack's admin service accounts may invoke the functions that serve the admin API."""
    grants: dict[str, pulumi.Resource] = {}
    for spec in CATALOG:
        invoker = member(accounts.pusher) if spec.trigger == "pubsub" else f"serviceAccount:{cfg.backend_invoker}"
        grants[spec.name] = grant_invoker(cfg, functions[spec.name], f"{spec.name}-invoker", invoker)
        if spec.admin:
            for account in cfg.admin.service_accounts:
                grant_invoker(cfg, functions[spec.name], f"{spec.name}-invoker-{account.split('@')[0]}",
                              f"serviceAccount:{account}")
    return grants


def grant_invoker(cfg: StackConfig, fn: gcp.cloudfunctionsv2.Function, name: str,
                  invoker: pulumi.Input[str]) -> gcp.cloudrunv2.ServiceIamMember:
    """``roles/run.invoker`` on the Cloud Run service of one function."""
    return gcp.cloudrunv2.ServiceIamMember(
        name, project=cfg.project, location=cfg.region,
        name=fn.service_config.apply(lambda sc: sc.service if sc else None), role=INVOKER_ROLE, member=invoker)
