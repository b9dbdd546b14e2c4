"""The periodic recovery sweep: a Cloud Scheduler job publishing ``{"kind": "sweep"}`` to the
resume topic on the stack's ``sweepSchedule``.

The resume function answers that message with ``shared/durable/router.py`` ``Router.sweep``: it
re-publishes outbox entries whose resume message may have been lost (a crash between commit and
publish, a dead-lettered delivery) and recovers runs whose lease expired mid-invocation. Without
this job nothing in production would ever run it (``make dev`` runs it on a timer instead).
Cloud Scheduler publishes with its own service agent, whose role already allows publishing.
"""

from __future__ import annotations

import base64
import json

import pulumi
import pulumi_gcp as gcp

from agent_infra.config import SCHEDULE_TICK_CRON, SCHEDULE_TICK_MESSAGE, SWEEP_MESSAGE, StackConfig
from agent_infra.messaging import Topics

TIME_ZONE = "Etc/UTC"


def sweep_payload(message: dict[str, str] = SWEEP_MESSAGE) -> str:
    """The message body as Cloud Scheduler wants it: base64 of the JSON the resume function decodes."""
    return base64.b64encode(json.dumps(message, separators=(",", ":")).encode()).decode()


def create_sweep_job(cfg: StackConfig, topics: Topics, depends_on: list[pulumi.Resource]) -> gcp.cloudscheduler.Job:
    return gcp.cloudscheduler.Job(
        "resume-sweep", project=cfg.project, region=cfg.region, name=f"{cfg.resume_topic}-sweep",
        description=f"Agent Runtime ({cfg.environment}): recovery sweep (stranded outbox entries, expired leases)",
        schedule=cfg.sweep_schedule, time_zone=TIME_ZONE,
        # A missed tick is covered by the next one: no retries that could pile sweeps up.
        retry_config=gcp.cloudscheduler.JobRetryConfigArgs(retry_count=0),
        pubsub_target=gcp.cloudscheduler.JobPubsubTargetArgs(
            topic_name=topics.resume.id, data=sweep_payload(), attributes=dict(SWEEP_MESSAGE)),
        opts=pulumi.ResourceOptions(depends_on=depends_on))


def create_schedule_tick_job(cfg: StackConfig, topics: Topics,
                             depends_on: list[pulumi.Resource]) -> gcp.cloudscheduler.Job:
    """Users' scheduled runs (docs/run-control.md, "Schedules"): ``{"kind": "schedule_tick"}`` every
    minute; the resume function fires the schedules that are due (the minute it handles the
    message in is the tick's time; a tick delivered twice starts nothing twice)."""
    return gcp.cloudscheduler.Job(
        "schedule-tick", project=cfg.project, region=cfg.region, name=f"{cfg.resume_topic}-schedule-tick",
        description=f"Agent Runtime ({cfg.environment}): users' scheduled runs (one tick a minute)",
        schedule=SCHEDULE_TICK_CRON, time_zone=TIME_ZONE,
        # A missed tick is covered by the next one (an overdue schedule fires at the next tick).
        retry_config=gcp.cloudscheduler.JobRetryConfigArgs(retry_count=0),
        pubsub_target=gcp.cloudscheduler.JobPubsubTargetArgs(
            topic_name=topics.resume.id, data=sweep_payload(SCHEDULE_TICK_MESSAGE),
            attributes=dict(SCHEDULE_TICK_MESSAGE)),
        opts=pulumi.ResourceOptions(depends_on=depends_on))
