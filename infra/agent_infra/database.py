"""The Firestore database, its composite indexes and TTL policies.

Single-field indexes are automatic: queries ordered by one field without an equality filter
(memories, thread messages by ``createdAt``) and reads by document id (events by seq, turns,
actions) need nothing more. A query with an equality filter and an order on another field needs
a composite index: ``INDEXES`` holds exactly those of the runtime's ``Query(...)`` calls in
``shared/``, no more (infra/tests/test_indexes.py derives them from the source and compares).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import pulumi
import pulumi_gcp as gcp

from agent_infra.config import StackConfig

DATABASE = "(default)"


@dataclass(frozen=True)
class IndexSpec:
    collection: str
    fields: tuple[tuple[str, Literal["ASCENDING", "DESCENDING"]], ...]
    scope: Literal["COLLECTION", "COLLECTION_GROUP"] = "COLLECTION"

    @property
    def key(self) -> str:
        return "-".join([self.collection, *(f for f, _ in self.fields)])


INDEXES: tuple[IndexSpec, ...] = (
    # shared/state/deliveries_repo.py due: the sweep publishes webhook retries that are due.
    IndexSpec("deliveries", (("status", "ASCENDING"), ("nextAttemptAt", "ASCENDING"))),
    # shared/state/deliveries_repo.py for_target (GET /api/agent/webhooks/{name}/deliveries), newest first.
    IndexSpec("deliveries", (("uid", "ASCENDING"), ("target", "ASCENDING"), ("createdAt", "DESCENDING"))),
    # shared/loop/resume.py recover_runs: runs in "planning"/"executing" by lease expiry.
    IndexSpec("runs", (("status", "ASCENDING"), ("leaseExpiresAt", "ASCENDING"))),
    # shared/state/runs_repo.py expired_pauses: the sweep closes pauses whose approvals all expired,
    # by pauseExpiresAt (set only on pauses that asked someone); waiting_for_people (the
    # approvals-waiting gauge) counts the same runs.
    IndexSpec("runs", (("status", "ASCENDING"), ("pauseExpiresAt", "ASCENDING"))),
    # shared/state/runs_repo.py legacy_pauses (runs paused before pauseExpiresAt existed).
    IndexSpec("runs", (("status", "ASCENDING"), ("updatedAt", "ASCENDING"))),
    # shared/state/sessions_repo.py list_for (GET /api/agent/sessions): a user's sessions, newest first.
    IndexSpec("sessions", (("uid", "ASCENDING"), ("createdAt", "DESCENDING"))),
    # The sweep ends plan sessions waiting past their deadline (shared/plans/sessions.py).
    IndexSpec("sessions", (("status", "ASCENDING"), ("deadline", "ASCENDING"))),
    # shared/durable/outbox.py Outbox.sweep: "pending"/"published" entries, oldest first.
    IndexSpec("outbox", (("status", "ASCENDING"), ("createdAt", "ASCENDING"))),
    # shared/state/runs_repo.py list_runs_for (GET /api/agent/runs): a user's runs, newest first.
    IndexSpec("runs", (("uid", "ASCENDING"), ("createdAt", "DESCENDING"))),
    # shared/state/runs_repo.py list_approvals_for (GET /api/agent/approvals): a user's approvals in
    # one status, newest first (users/{uid}/agentApprovals).
    IndexSpec("agentApprovals", (("status", "ASCENDING"), ("createdAt", "DESCENDING"))),
    # shared/state/projects_repo.py list_tasks: a project's tasks in one status, in list order
    # (users/{uid}/projects/{id}/tasks; the collection id "tasks" is shared with plan-session tasks).
    IndexSpec("tasks", (("status", "ASCENDING"), ("order", "ASCENDING"))),
    # shared/state/runs_repo.py page_threads (GET /api/agent/threads): a user's threads begun before
    # issue 35 (the shared collection), newest first.
    IndexSpec("threads", (("uid", "ASCENDING"), ("createdAt", "DESCENDING"))),
    # shared/state/a2a_tasks_repo.py list_tasks: a user's A2A tasks of one context, newest first.
    IndexSpec("a2aTasks", (("contextId", "ASCENDING"), ("createdAt", "DESCENDING"))),
    # shared/state/workspaces_repo.py live: the sweep's live workspaces, least recently used first.
    IndexSpec("workspaces", (("status", "ASCENDING"), ("lastUsedAt", "ASCENDING"))),
)

# Collection (group) ids whose documents carry an ``expireAt`` timestamp that Firestore's TTL
# deletes after; the runtime sets it (retention per stack, APPROVAL_TTL_S for approvals).
TTL_FIELD = "expireAt"
TTL_COLLECTIONS = ("events", "audit", "agentApprovals", "idempotencyKeys")


def create_database(cfg: StackConfig, depends_on: list[pulumi.Resource]) -> gcp.firestore.Database:
    r = cfg.retention
    return gcp.firestore.Database(
        "firestore", project=cfg.project, name=DATABASE, location_id=cfg.firestore_location,
        type="FIRESTORE_NATIVE", concurrency_mode="PESSIMISTIC", app_engine_integration_mode="DISABLED",
        point_in_time_recovery_enablement=(
            "POINT_IN_TIME_RECOVERY_ENABLED" if r.point_in_time_recovery else "POINT_IN_TIME_RECOVERY_DISABLED"),
        delete_protection_state="DELETE_PROTECTION_ENABLED" if r.delete_protection else "DELETE_PROTECTION_DISABLED",
        # Destroying a stack never deletes the data; delete the database by hand if really meant.
        deletion_policy="ABANDON",
        opts=pulumi.ResourceOptions(depends_on=depends_on, protect=r.delete_protection))


def create_indexes(cfg: StackConfig, db: gcp.firestore.Database) -> list[gcp.firestore.Index]:
    return [
        gcp.firestore.Index(
            f"index-{spec.key}", project=cfg.project, database=db.name, collection=spec.collection,
            query_scope=spec.scope,
            fields=[gcp.firestore.IndexFieldArgs(field_path=f, order=o) for f, o in spec.fields])
        for spec in INDEXES
    ]


def create_ttl_policies(cfg: StackConfig, db: gcp.firestore.Database) -> list[gcp.firestore.Field]:
    # An empty index_config also drops the single-field index on expireAt: it is never queried,
    # and indexing a monotonically increasing timestamp only creates write hot spots.
    return [
        gcp.firestore.Field(
            f"ttl-{collection}", project=cfg.project, database=db.name, collection=collection, field=TTL_FIELD,
            ttl_config=gcp.firestore.FieldTtlConfigArgs(), index_config=gcp.firestore.FieldIndexConfigArgs())
        for collection in TTL_COLLECTIONS
    ]


def create_backups(cfg: StackConfig, db: gcp.firestore.Database) -> list[gcp.firestore.BackupSchedule]:
    days = cfg.retention.backup_days
    if days <= 0:
        return []
    return [gcp.firestore.BackupSchedule(
        "firestore-daily-backup", project=cfg.project, database=db.name, retention=f"{days * 86400}s",
        daily_recurrence=gcp.firestore.BackupScheduleDailyRecurrenceArgs())]
