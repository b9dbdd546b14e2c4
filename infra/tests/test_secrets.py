"""Secrets reach functions only as Secret Manager references, never as plain values."""

from __future__ import annotations

from pathlib import Path

import pytest
from agent_infra.config import CATALOG, SECRET_ENV
from harness import STACKS, Declared, deploy, functions, named, of_type, stack_config


def secret_looking(name: str) -> bool:
    return any(word in name for word in ("KEY", "SECRET", "TOKEN", "PASSWORD"))


@pytest.mark.parametrize("stack", STACKS)
def test_secrets_are_not_plain_env_vars(stacks: dict[str, list[Declared]], stack: str) -> None:
    for fn in functions(stacks[stack]).values():
        plain = fn["serviceConfig"]["environmentVariables"]
        assert not set(plain) & set(SECRET_ENV.values())
        assert not any(secret_looking(k) for k in plain), sorted(plain)
        assert not fn["buildConfig"].get("environmentVariables")
        # Secret-looking names are fine (and expected) as Secret Manager mounts.
        mounted = {m["key"] for m in fn["serviceConfig"]["secretEnvironmentVariables"]}
        assert mounted <= set(SECRET_ENV.values())
        assert all(secret_looking(k) for k in mounted), sorted(mounted)
    assert all(secret_looking(k) for k in SECRET_ENV.values())


@pytest.mark.parametrize("stack", STACKS)
def test_the_oauth_client_secret_is_mounted_where_tools_run(stacks: dict[str, list[Declared]], stack: str) -> None:
    fns = functions(stacks[stack])
    mounts = {name: {m["key"] for m in fn["serviceConfig"]["secretEnvironmentVariables"]} for name, fn in fns.items()}
    with_secret = {name for name, keys in mounts.items() if "GOOGLE_OAUTH_CLIENT_SECRET" in keys}
    assert with_secret == {"agent-run", "agent-stream", "agent-resume", "agent-a2a"}
    assert named(stacks[stack], "google-oauth-client-secret").inputs["secretId"] == "agent-google-oauth-client-secret"


def test_the_oauth_client_id_is_plain_stack_config(bundle_dir: Path) -> None:
    client_id = "1234-abc.apps.googleusercontent.com"
    fns = functions(deploy("staging", bundle_dir, {"agent-runtime:googleOAuthClientId": client_id}))
    for name, fn in fns.items():
        env = fn["serviceConfig"]["environmentVariables"]
        if name in ("agent-run", "agent-stream", "agent-resume", "agent-a2a"):
            assert env["GOOGLE_OAUTH_CLIENT_ID"] == client_id
        else:
            assert "GOOGLE_OAUTH_CLIENT_ID" not in env
    # Unset (the committed stacks): no empty variable at all.
    assert all("GOOGLE_OAUTH_CLIENT_ID" not in fn["serviceConfig"]["environmentVariables"]
               for fn in functions(deploy("staging", bundle_dir)).values())


@pytest.mark.parametrize("variable", ["GOOGLE_OAUTH_CLIENT_SECRET", "GOOGLE_OAUTH_CLIENT_ID"])
def test_runtime_env_may_not_set_the_oauth_client(bundle_dir: Path, variable: str) -> None:
    env = {**stack_config("dev")["agent-runtime:runtimeEnv"], variable: "x"}
    with pytest.raises(Exception, match="runtimeEnv may not"):
        deploy("dev", bundle_dir, {"agent-runtime:runtimeEnv": env})


@pytest.mark.parametrize("stack", STACKS)
def test_secret_env_references_declared_secrets(stacks: dict[str, list[Declared]], stack: str) -> None:
    declared = stacks[stack]
    ids = {"gemini": named(declared, "gemini-api-key").inputs["secretId"],
           "credentials": named(declared, "credentials-encryption-key").inputs["secretId"],
           "google_oauth": named(declared, "google-oauth-client-secret").inputs["secretId"]}
    fns = functions(declared)
    for spec in CATALOG:
        mounted = fns[f"agent-{spec.name}"]["serviceConfig"]["secretEnvironmentVariables"]
        assert sorted((m["key"], m["secret"], m["version"]) for m in mounted) == sorted(
            (SECRET_ENV[k], ids[k], "latest") for k in spec.secrets)


@pytest.mark.parametrize("stack", STACKS)
def test_secret_values_never_enter_pulumi_state(stacks: dict[str, list[Declared]], stack: str) -> None:
    declared = stacks[stack]
    assert not of_type(declared, "gcp:secretmanager/secretVersion:SecretVersion")
    assert len(of_type(declared, "gcp:secretmanager/secret:Secret")) == len(SECRET_ENV) == 3
