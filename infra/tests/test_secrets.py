"""Secrets reach functions only as Secret Manager references, never as plain values."""

from __future__ import annotations

import pytest
from agent_infra.config import CATALOG, SECRET_ENV
from harness import STACKS, Declared, functions, named, of_type


@pytest.mark.parametrize("stack", STACKS)
def test_secrets_are_not_plain_env_vars(stacks: dict[str, list[Declared]], stack: str) -> None:
    for fn in functions(stacks[stack]).values():
        plain = fn["serviceConfig"]["environmentVariables"]
        assert not set(plain) & set(SECRET_ENV.values())
        assert not any("KEY" in k or "SECRET" in k or "TOKEN" in k for k in plain), sorted(plain)
        assert not fn["buildConfig"].get("environmentVariables")


@pytest.mark.parametrize("stack", STACKS)
def test_secret_env_references_declared_secrets(stacks: dict[str, list[Declared]], stack: str) -> None:
    declared = stacks[stack]
    ids = {"gemini": named(declared, "gemini-api-key").inputs["secretId"],
           "credentials": named(declared, "credentials-encryption-key").inputs["secretId"]}
    fns = functions(declared)
    for spec in CATALOG:
        mounted = fns[f"agent-{spec.name}"]["serviceConfig"]["secretEnvironmentVariables"]
        assert sorted((m["key"], m["secret"], m["version"]) for m in mounted) == sorted(
            (SECRET_ENV[k], ids[k], "latest") for k in spec.secrets)


@pytest.mark.parametrize("stack", STACKS)
def test_secret_values_never_enter_pulumi_state(stacks: dict[str, list[Declared]], stack: str) -> None:
    declared = stacks[stack]
    assert not of_type(declared, "gcp:secretmanager/secretVersion:SecretVersion")
    assert len(of_type(declared, "gcp:secretmanager/secret:Secret")) == 2
