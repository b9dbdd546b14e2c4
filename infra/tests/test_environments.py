"""Production differs from development where it must: warm instances and longer retention."""

from __future__ import annotations

from harness import Declared, functions, named, of_type


def min_instances(declared: list[Declared]) -> dict[str, int]:
    return {n: fn["serviceConfig"]["minInstanceCount"] for n, fn in functions(declared).items()}


def env(declared: list[Declared], key: str) -> int:
    return int(functions(declared)["agent-run"]["serviceConfig"]["environmentVariables"][key])


def test_min_instances(stacks: dict[str, list[Declared]]) -> None:
    dev, prod = min_instances(stacks["dev"]), min_instances(stacks["prod"])
    assert set(dev.values()) == {0}
    assert set(min_instances(stacks["staging"]).values()) == {0}
    for name in ("agent-run", "agent-stream", "agent-resume", "agent-a2a"):
        assert prod[name] >= 1
    assert all(fn["serviceConfig"]["maxInstanceCount"] > 3 for fn in functions(stacks["prod"]).values())


def test_retention(stacks: dict[str, list[Declared]]) -> None:
    dev, staging, prod = stacks["dev"], stacks["staging"], stacks["prod"]
    for key in ("EVENT_RETENTION_S", "AUDIT_RETENTION_S"):
        assert env(dev, key) < env(staging, key) < env(prod, key)
    assert not of_type(dev, "gcp:firestore/backupSchedule:BackupSchedule")
    (backup,) = of_type(prod, "gcp:firestore/backupSchedule:BackupSchedule")
    assert int(backup.inputs["retention"].removesuffix("s")) >= 14 * 86400
    dev_db, prod_db = named(dev, "firestore").inputs, named(prod, "firestore").inputs
    assert prod_db["pointInTimeRecoveryEnablement"] == "POINT_IN_TIME_RECOVERY_ENABLED"
    assert prod_db["deleteProtectionState"] == "DELETE_PROTECTION_ENABLED"
    assert dev_db["deleteProtectionState"] == "DELETE_PROTECTION_DISABLED"


def test_each_stack_targets_its_own_project(stacks: dict[str, list[Declared]]) -> None:
    projects = {s: {fn["project"] for fn in functions(d).values()} for s, d in stacks.items()}
    assert all(len(p) == 1 for p in projects.values())
    assert len(set.union(*projects.values())) == 3
