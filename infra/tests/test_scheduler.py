"""The recovery sweep is scheduled in every stack: a Cloud Scheduler job publishes
``{"kind": "sweep"}`` to the resume topic, which the resume function answers with its sweep."""

from __future__ import annotations

import base64
import json

import pytest
from agent_infra.apis import APIS
from harness import STACKS, Declared, of_type, stack_config

JOB = "gcp:cloudscheduler/job:Job"


def sweep_job(declared: list[Declared]) -> dict[str, object]:
    (job,) = [j for j in of_type(declared, JOB) if j.name == "resume-sweep"]
    return job.inputs


@pytest.mark.parametrize("stack", STACKS)
def test_a_schedule_tick_job_publishes_every_minute_to_the_resume_topic(stacks: dict[str, list[Declared]],
                                                                        stack: str) -> None:
    cfg = stack_config(stack)
    jobs = of_type(stacks[stack], JOB)
    assert sorted(j.name for j in jobs) == ["resume-sweep", "schedule-tick"]
    (tick,) = [j.inputs for j in jobs if j.name == "schedule-tick"]
    assert tick["schedule"] == "* * * * *" and tick["timeZone"] == "Etc/UTC"
    target = tick["pubsubTarget"]
    assert isinstance(target, dict)
    assert target["topicName"] == f"projects/{cfg['gcp:project']}/topics/{cfg['agent-runtime:resumeTopic']}"
    # shared/durable/kinds.py SCHEDULE_TICK: resume fires the due schedules (shared/agent/schedules.py).
    assert json.loads(base64.b64decode(target["data"], validate=True)) == {"kind": "schedule_tick"}
    assert target["attributes"] == {"kind": "schedule_tick"}


@pytest.mark.parametrize("stack", STACKS)
def test_one_sweep_job_targets_the_resume_topic(stacks: dict[str, list[Declared]], stack: str) -> None:
    cfg = stack_config(stack)
    job = sweep_job(stacks[stack])
    target = job["pubsubTarget"]
    assert isinstance(target, dict)
    assert target["topicName"] == f"projects/{cfg['gcp:project']}/topics/{cfg['agent-runtime:resumeTopic']}"
    assert (job["project"], job["region"]) == (cfg["gcp:project"], cfg["gcp:region"])
    assert job["schedule"] == cfg["agent-runtime:sweepSchedule"]
    assert job["timeZone"] == "Etc/UTC"


@pytest.mark.parametrize("stack", STACKS)
def test_the_payload_is_the_sweep_message(stacks: dict[str, list[Declared]], stack: str) -> None:
    target = sweep_job(stacks[stack])["pubsubTarget"]
    assert isinstance(target, dict)
    # shared/durable/messages.py WorkMessage: {"kind": "sweep"} makes resume run shared/durable/router.py Router.sweep.
    assert json.loads(base64.b64decode(target["data"], validate=True)) == {"kind": "sweep"}
    assert target["attributes"] == {"kind": "sweep"}


def test_prod_sweeps_more_often_than_dev(stacks: dict[str, list[Declared]]) -> None:
    def minutes(stack: str) -> int:
        schedule = str(sweep_job(stacks[stack])["schedule"])
        assert schedule.endswith(" * * * *") and schedule.startswith("*/"), schedule
        return int(schedule.split()[0].removeprefix("*/"))

    assert minutes("prod") == 2 and minutes("dev") == 5
    assert minutes("prod") <= minutes("staging") <= minutes("dev")


def test_the_scheduler_api_is_enabled(stacks: dict[str, list[Declared]]) -> None:
    assert "cloudscheduler.googleapis.com" in APIS
    for declared in stacks.values():
        services = {d.inputs["service"] for d in of_type(declared, "gcp:projects/service:Service")}
        assert "cloudscheduler.googleapis.com" in services
