"""Every function of the bundle exists in every stack with the settings its stack file gives."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from agent_infra.config import CATALOG, DEADLINE_MARGIN_S
from harness import STACKS, Declared, deploy, functions, named, stack_config


@pytest.mark.parametrize("stack", STACKS)
def test_every_entry_point_is_deployed_once(stacks: dict[str, list[Declared]], stack: str) -> None:
    fns = functions(stacks[stack])
    assert sorted(fns) == sorted(f"agent-{s.name}" for s in CATALOG)
    assert {s.name for s in CATALOG} >= {"run", "stream", "runs", "approve", "resume", "goals", "integrations"}
    for spec in CATALOG:
        build = fns[f"agent-{spec.name}"]["buildConfig"]
        assert build["entryPoint"] == spec.entry_point
        assert build["runtime"] == "python311"


@pytest.mark.parametrize("stack", STACKS)
def test_scaling_matches_the_stack_file(stacks: dict[str, list[Declared]], stack: str) -> None:
    scaling = stack_config(stack)["agent-runtime:scaling"]
    for name, fn in functions(stacks[stack]).items():
        want, sc = scaling[name.removeprefix("agent-")], fn["serviceConfig"]
        assert sc["availableMemory"] == want["memory"]
        assert sc["minInstanceCount"] == want["minInstances"]
        assert sc["maxInstanceCount"] == want["maxInstances"]
        assert sc["maxInstanceRequestConcurrency"] == want["concurrency"]
        if "timeoutS" in want:
            assert sc["timeoutSeconds"] == want["timeoutS"]


@pytest.mark.parametrize("stack", STACKS)
def test_deadline_bound_functions_outlive_the_run_deadline(stacks: dict[str, list[Declared]], stack: str) -> None:
    deadline = float(stack_config(stack)["agent-runtime:runtimeEnv"]["AGENT_RUN_DEADLINE_S"])
    fns = functions(stacks[stack])
    for name in ("agent-run", "agent-stream", "agent-resume", "agent-a2a"):
        assert fns[name]["serviceConfig"]["timeoutSeconds"] >= math.ceil(deadline) + DEADLINE_MARGIN_S
    # Following a live run holds the connection open for a while.
    assert fns["agent-runs"]["serviceConfig"]["timeoutSeconds"] >= 300


@pytest.mark.parametrize("stack", STACKS)
def test_environment_variables(stacks: dict[str, list[Declared]], stack: str) -> None:
    cfg = stack_config(stack)
    topic = named(stacks[stack], "resume-topic").inputs["name"]
    for fn in functions(stacks[stack]).values():
        env = fn["serviceConfig"]["environmentVariables"]
        assert env["STATE_BACKEND"] == "firestore"
        assert env["AUTH_MODE"] == "firebase"
        assert env["DISPATCHER"] == "pubsub"
        assert env["RESUME_TOPIC"] == topic
        assert env["GOOGLE_CLOUD_PROJECT"] == cfg["gcp:project"]
        for key, value in cfg["agent-runtime:runtimeEnv"].items():
            assert env[key] == value


@pytest.mark.parametrize("stack", STACKS)
def test_functions_build_the_uploaded_bundle(stacks: dict[str, list[Declared]], stack: str) -> None:
    declared = stacks[stack]
    obj = named(declared, "function-bundle").inputs
    bucket = named(declared, "function-sources").inputs
    assert bucket["publicAccessPrevention"] == "enforced"
    for fn in functions(declared).values():
        assert fn["buildConfig"]["source"]["storageSource"] == {"bucket": bucket["name"], "object": obj["name"]}
        assert fn["location"] == stack_config(stack)["gcp:region"]


def test_a_changed_bundle_gets_a_new_object(tmp_path: Path, bundle_dir: Path) -> None:
    changed = tmp_path / "bundle"
    changed.mkdir()
    (changed / "main.py").write_text("from functions.run import run  # changed\n")
    before = named(deploy("dev", bundle_dir), "function-bundle").inputs["name"]
    after = named(deploy("dev", changed), "function-bundle").inputs["name"]
    assert before != after


def test_a_missing_bundle_is_refused(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="no bundle"):
        deploy("dev", tmp_path / "nothing")


@pytest.mark.parametrize("bad", [
    {"agent-runtime:runtimeEnv": {"GEMINI_API_KEY": "plain"}},
    {"agent-runtime:runtimeEnv": {"AUTH_MODE": "local"}},
    {"agent-runtime:scaling": {"stream": {"timeoutS": 60}}},
    {"agent-runtime:scaling": {"nosuch": {}}},
    {"agent-runtime:scaling": {"run": {"minInstances": 5, "maxInstances": 1}}},
    {"agent-runtime:sweepSchedule": "every 5 minutes"},
    {"agent-runtime:sweepSchedule": "*/5 * * *"},
])
def test_a_bad_stack_file_is_refused(bundle_dir: Path, bad: dict[str, object]) -> None:
    overrides = dict(bad)
    if "agent-runtime:scaling" in bad:  # one function's settings changed, the others as in the stack file
        overrides["agent-runtime:scaling"] = {**stack_config("dev")["agent-runtime:scaling"],
                                              **bad["agent-runtime:scaling"]}  # type: ignore[dict-item]
    with pytest.raises(Exception, match=r"runtimeEnv may not|below the run deadline|unknown functions|minInstances"
                                        r"|five-field cron"):
        deploy("dev", bundle_dir, overrides)
