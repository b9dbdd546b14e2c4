"""One endpoint (issue 35): the load balancer's URL map routes every path of the route table
(``shared/routes.py``) to the function that serves it, through that function's serverless NEG.

The URL map is read as declared (the Pulumi program run offline) and evaluated like the load
balancer does: the first route rule, by priority, whose path template matches.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from agent_infra.catalog import load_route_table
from agent_infra.endpoint import IAM_ONLY_PATHS
from harness import PROJECT_NUMBER, STACKS, Declared, deploy, functions, named, of_type, stack_config

TABLE = load_route_table()
SAMPLES = {"provider": "google", "name": "srv1"}


def concrete(path: str) -> str:
    return re.sub(r"\{([A-Za-z_]+)\}", lambda m: SAMPLES.get(m.group(1), "x1"), path)


def routed(url_map: dict[str, Any], path: str) -> str:
    """The service the URL map sends ``path`` to: the matching rule of lowest priority number."""
    (matcher,) = url_map["pathMatchers"]
    for rule in sorted(matcher["routeRules"], key=lambda r: r["priority"]):
        for match in rule["matchRules"]:
            pattern = re.sub(r"\\\{[A-Za-z_][A-Za-z0-9_]*\\\}", "[^/]+", re.escape(match["pathTemplateMatch"]))
            if re.fullmatch(pattern, path):
                return str(rule["service"])
    return str(matcher["defaultService"])


@pytest.mark.parametrize("stack", STACKS)
def test_every_path_of_the_route_table_reaches_its_function(stacks: dict[str, list[Declared]], stack: str) -> None:
    declared = stacks[stack]
    url_map = named(declared, "endpoint").inputs
    served = [r for r in TABLE.ROUTES if r.function is not None and r.path not in IAM_ONLY_PATHS]
    assert len(served) > 30
    for route in served:
        assert routed(url_map, concrete(route.path)) == f"backend-{route.function}-id", (route.method, route.path)
    # Each backend is its function's serverless NEG.
    for backend in of_type(declared, "gcp:compute/backendService:BackendService"):
        function = backend.name.removeprefix("backend-")
        (group,) = backend.inputs["backends"]
        assert group["group"] == f"neg-{function}-id"
        neg = named(declared, f"neg-{function}").inputs
        assert neg["networkEndpointType"] == "SERVERLESS" and neg["cloudFunction"]["function"] == f"agent-{function}"


@pytest.mark.parametrize("stack", STACKS)
def test_the_goals_agent_is_not_on_the_public_endpoint(stacks: dict[str, list[Declared]], stack: str) -> None:
    url_map = named(stacks[stack], "endpoint").inputs
    templates = {m["pathTemplateMatch"] for r in url_map["pathMatchers"][0]["routeRules"] for m in r["matchRules"]}
    assert "/agent/run" not in templates and "/api/agent/run" in templates
    assert not any(d.name == "backend-goals" for d in stacks[stack])


def test_a_custom_domain_gets_https_with_a_managed_certificate(bundle_dir: Path) -> None:
    declared = deploy("dev", bundle_dir, {"agent-runtime:endpointDomain": "api.example.com"})
    cert = named(declared, "endpoint-cert").inputs
    assert cert["managed"]["domains"] == ["api.example.com"]
    proxy = named(declared, "endpoint-proxy")
    assert proxy.typ == "gcp:compute/targetHttpsProxy:TargetHttpsProxy"
    assert named(declared, "endpoint-rule").inputs["portRange"] == "443"


def test_without_a_domain_the_address_answers_http(stacks: dict[str, list[Declared]]) -> None:
    proxy = named(stacks["dev"], "endpoint-proxy")
    assert proxy.typ == "gcp:compute/targetHttpProxy:TargetHttpProxy"
    assert named(stacks["dev"], "endpoint-rule").inputs["portRange"] == "80"


SECRET_SIG = "4dabf18193072939515e22adb298388d"
"""How the Pulumi engine marks a secret value (pulumi.runtime.rpc's special signature key)."""
IAP_AGENT = f"serviceAccount:service-{PROJECT_NUMBER}@gcp-sa-iap.iam.gserviceaccount.com"
ADMINS = ["ops-admin@agent-runtime-dev.iam.gserviceaccount.com", "Support@other-project.iam.gserviceaccount.com"]


def iap_grants(declared: list[Declared]) -> set[tuple[str, str, str]]:
    return {(d.inputs["webBackendService"], d.inputs["role"], d.inputs["member"])
            for d in of_type(declared, "gcp:iap/webBackendServiceIamMember:WebBackendServiceIamMember")}


@pytest.mark.parametrize("stack", STACKS)
def test_one_token_serves_every_route_through_iap(stacks: dict[str, list[Declared]], stack: str) -> None:
    """IAP on every backend service; the backend's account may pass it on every one; IAP's service
    agent may invoke every function behind the endpoint (the function URLs keep their IAM)."""
    declared = stacks[stack]
    backends = of_type(declared, "gcp:compute/backendService:BackendService")
    assert backends and all(b.inputs["iap"] == {"enabled": True} for b in backends)
    backend_sa = f"serviceAccount:{stack_config(stack)['agent-runtime:backendServiceAccount']}"
    admins = {f"serviceAccount:{a}" for a in stack_config(stack)["agent-runtime:admin"]["serviceAccounts"]}
    assert admins, "every stack names its admin service account"
    want = {(b.inputs["name"], "roles/iap.httpsResourceAccessor", backend_sa) for b in backends}
    want |= {("agent-admin-backend", "roles/iap.httpsResourceAccessor", a) for a in admins}
    assert iap_grants(declared) == want
    invokers = {(d.inputs["name"], d.inputs["member"])
                for d in of_type(declared, "gcp:cloudrunv2/serviceIamMember:ServiceIamMember")}
    behind = {f"agent-{b.name.removeprefix('backend-')}" for b in backends}
    assert {name for name, member in invokers if member == IAP_AGENT} == behind
    identity = named(declared, "iap-agent").inputs
    assert identity["service"] == "iap.googleapis.com"


def test_admin_service_accounts_from_the_stack_config(bundle_dir: Path) -> None:
    """``agent-runtime:admin``: the admin function (the one serving /api/admin/) is told the accounts
    and the audience of their tokens; they may invoke it and pass IAP on its backend only; no other
    function is told them."""
    declared = deploy("dev", bundle_dir, {"agent-runtime:admin": {"serviceAccounts": ADMINS}})
    admins = [a.lower() for a in ADMINS]
    for name, fn in functions(declared).items():
        env = fn["serviceConfig"]["environmentVariables"]
        if name == "agent-admin":
            assert env["ADMIN_SERVICE_ACCOUNTS"] == ",".join(admins)
            assert env["ADMIN_AUDIENCE"] == "agent-runtime-admin:agent-runtime-dev"
        else:
            assert "ADMIN_SERVICE_ACCOUNTS" not in env and "ADMIN_AUDIENCE" not in env, name
    invokers = {(d.inputs["name"], d.inputs["member"])
                for d in of_type(declared, "gcp:cloudrunv2/serviceIamMember:ServiceIamMember")}
    assert {(n, m) for n, m in invokers if m.removeprefix("serviceAccount:") in admins} == {
        ("agent-admin", f"serviceAccount:{a}") for a in admins}
    assert {(s, m) for s, _, m in iap_grants(declared) if m.removeprefix("serviceAccount:") in admins} == {
        ("agent-admin-backend", f"serviceAccount:{a}") for a in admins}

    audience = deploy("dev", bundle_dir, {"agent-runtime:admin": {"serviceAccounts": ADMINS[:1],
                                                                  "audience": "https://api.example.com"}})
    assert functions(audience)["agent-admin"]["serviceConfig"]["environmentVariables"]["ADMIN_AUDIENCE"] == \
        "https://api.example.com"


@pytest.mark.parametrize("admin", [{"serviceAccounts": ["alice@example.com"]}, {"accounts": ADMINS}])
def test_a_bad_admin_config_is_refused(bundle_dir: Path, admin: dict[str, Any]) -> None:
    with pytest.raises(Exception, match="admin"):
        deploy("dev", bundle_dir, {"agent-runtime:admin": admin})


def test_runtime_env_may_not_name_the_admin(bundle_dir: Path) -> None:
    env = {**stack_config("dev")["agent-runtime:runtimeEnv"], "ADMIN_SERVICE_ACCOUNTS": ADMINS[0]}
    with pytest.raises(Exception, match="ADMIN_SERVICE_ACCOUNTS"):
        deploy("dev", bundle_dir, {"agent-runtime:runtimeEnv": env})


def test_iap_with_the_stacks_own_oauth_client(bundle_dir: Path) -> None:
    with pytest.raises(Exception, match="endpointIap may only set oauthClientId"):
        deploy("dev", bundle_dir, {"agent-runtime:endpointIap": {"oauthClientSecret": "in plain text"}})
    with pytest.raises(Exception, match="endpointIapClientSecret"):
        deploy("dev", bundle_dir, {"agent-runtime:endpointIap": {"oauthClientId": "123.apps.googleusercontent.com"}})
    client = {"oauthClientId": "123.apps.googleusercontent.com"}
    declared = deploy("dev", bundle_dir, {"agent-runtime:endpointIap": client,
                                          "agent-runtime:endpointIapClientSecret": "s3cret"})
    for backend in of_type(declared, "gcp:compute/backendService:BackendService"):
        iap = backend.inputs["iap"]
        # The client secret makes the whole block a Pulumi secret (encrypted in the state).
        assert SECRET_SIG in iap, iap
        assert iap["value"] == {"enabled": True, "oauth2ClientId": "123.apps.googleusercontent.com",
                                "oauth2ClientSecret": "s3cret"}
