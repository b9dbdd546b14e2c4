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
from harness import STACKS, Declared, deploy, named, of_type

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
