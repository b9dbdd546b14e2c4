"""One HTTPS endpoint for the whole API: a global external Application Load Balancer whose URL map is
generated from the route table (``shared/routes.py``), each path sent to its function through a
serverless network endpoint group. The functions stay separate deployments (their own scaling,
service account, secrets and timeouts); clients see one host.

Why a load balancer and not API Gateway: API Gateway reads OpenAPI 2.0 only (the document is 3.1),
buffers responses (the NDJSON and Server-Sent Events routes stream for minutes) and has no custom
domain of its own, while the load balancer routes by path template to serverless NEGs, streams,
takes a Google-managed certificate for a custom domain and Cloud Armor later. The routes are
generated, not written: :func:`path_rules` turns every ``{param}`` of the table into the URL map's
path template, so a route added to the table is routed without editing this module.

Only routes a deployed function serves go through it (``make dev``'s own routes have no function);
the goals agent (``/agent/run``, IAM-only) is left out: it is the backend's, not a public route.

Who may call it: Identity-Aware Proxy on every backend service. IAP checks the caller's Google
identity once for the whole endpoint (the backend's service account, and the stack's admin service
accounts on the admin API's backend: ``roles/iap.httpsResourceAccessor``), then calls the function
as IAP's own service agent (``roles/run.invoker`` on each function behind the endpoint). So one
token serves every route: the backend sends a JWT signed by its service account (``aud``
``<endpoint>/*``; a plain Google ID token needs an OAuth client allowlisted for programmatic access,
which the Google-managed one cannot be) in ``Proxy-Authorization: Bearer`` (IAP reads it there when
``Authorization`` is taken), and ``Authorization`` keeps the user's Firebase credential for the
runtime. Why IAP and not the functions' custom audience: Cloud
Functions (``cloudfunctionsv2.Function``) cannot declare custom audiences of their Cloud Run
service, and IAP needs no change to the functions. The function URLs keep working as before
(IAM per function).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_gcp as gcp

from agent_infra.config import CATALOG, NAMESPACE, StackConfig
from agent_infra.iam import grant_invoker

IAM_ONLY_PATHS = ("/agent/run",)
"""Routes reached by the backend with IAM only (the goals agent): not on the public endpoint."""
IAP_ACCESSOR_ROLE = "roles/iap.httpsResourceAccessor"


@dataclass(frozen=True)
class PathRule:
    """One path of the table: its URL-map path template and the function serving it."""

    path: str
    template: str
    function: str


def path_template(path: str) -> str:
    """The route's path as a URL-map ``pathTemplateMatch``: the table's ``{param}`` is the template's
    one-segment variable already. A segment pattern narrower than one segment (``{provider}`` is not
    ``mcp``) is kept by the rules' order: the table lists the more specific path first."""
    if not re.fullmatch(r"(/[A-Za-z0-9_.:~-]*(\{[A-Za-z_][A-Za-z0-9_]*\})?[A-Za-z0-9_.:~-]*)+", path):
        raise ValueError(f"{path} cannot be a URL-map path template")
    return path


def path_rules(routes: Any) -> list[PathRule]:
    """Every path a deployed function serves, in table order (a more specific path first: the
    table puts ``/api/integrations/mcp`` before ``/api/integrations/{provider}``). A path is served
    by one function whatever the method: the load balancer routes by path."""
    rules: dict[str, PathRule] = {}
    for route in routes:
        if route.function is None or route.path in IAM_ONLY_PATHS:
            continue
        known = rules.get(route.path)
        if known is not None and known.function != route.function:
            raise ValueError(f"{route.path} is served by {known.function} and {route.function}: one endpoint "
                             "routes by path, so a path belongs to one function")
        rules.setdefault(route.path, PathRule(route.path, path_template(route.path), route.function))
    return list(rules.values())


def accessors(cfg: StackConfig, function: str) -> list[str]:
    """Who IAP lets through to ``function``'s routes: the backend, and on the admin API the stack's
    admin service accounts."""
    spec = next(s for s in CATALOG if s.name == function)
    admins = cfg.admin.service_accounts if spec.admin else ()
    return [f"serviceAccount:{cfg.backend_invoker}", *(f"serviceAccount:{a}" for a in admins)]


def _iap(cfg: StackConfig) -> gcp.compute.BackendServiceIapArgs:
    """IAP on a backend service: the stack's OAuth client (``endpointIap.oauthClientId`` and the secret
    config value ``endpointIapClientSecret``) or, without one, the Google-managed client."""
    if not cfg.endpoint_iap_client_id:
        return gcp.compute.BackendServiceIapArgs(enabled=True)
    secret = pulumi.Config(NAMESPACE).get_secret("endpointIapClientSecret")
    if secret is None:
        raise ValueError("endpointIap.oauthClientId needs its secret: pulumi config set --secret "
                         "agent-runtime:endpointIapClientSecret ...")
    return gcp.compute.BackendServiceIapArgs(enabled=True, oauth2_client_id=cfg.endpoint_iap_client_id,
                                             oauth2_client_secret=secret)


def create_endpoint(cfg: StackConfig, fns: dict[str, gcp.cloudfunctionsv2.Function], routes: Any,
                    depends_on: list[pulumi.Resource]) -> dict[str, Any]:
    """The load balancer: a serverless NEG and a backend service per HTTP function, the URL map of
    :func:`path_rules`, and the frontend (HTTPS with a managed certificate when the stack names a
    ``domain``; HTTP on the address otherwise, for a first deploy before DNS exists)."""
    opts = pulumi.ResourceOptions(depends_on=depends_on)
    rules = path_rules(routes)
    public = {rule.function for rule in rules}
    iap = _iap(cfg)
    # IAP's service agent calls the functions behind the endpoint (created with the IAP API).
    iap_agent = gcp.projects.ServiceIdentity("iap-agent", project=cfg.project, service="iap.googleapis.com",
                                             opts=opts)
    backends: dict[str, gcp.compute.BackendService] = {}
    for spec in CATALOG:
        if spec.trigger != "http" or spec.name not in public:
            continue
        neg = gcp.compute.RegionNetworkEndpointGroup(
            f"neg-{spec.name}", project=cfg.project, region=cfg.region, name=f"agent-{spec.name}-neg",
            network_endpoint_type="SERVERLESS",
            cloud_function=gcp.compute.RegionNetworkEndpointGroupCloudFunctionArgs(function=fns[spec.name].name),
            opts=opts)
        backend = backends[spec.name] = gcp.compute.BackendService(
            f"backend-{spec.name}", project=cfg.project, name=f"agent-{spec.name}-backend",
            load_balancing_scheme="EXTERNAL_MANAGED", protocol="HTTPS", iap=iap,
            backends=[gcp.compute.BackendServiceBackendArgs(group=neg.id)], opts=opts)
        for who in accessors(cfg, spec.name):
            gcp.iap.WebBackendServiceIamMember(
                f"iap-{spec.name}-{who.split(':', 1)[1].split('@')[0]}", project=cfg.project,
                web_backend_service=backend.name, role=IAP_ACCESSOR_ROLE, member=who)
        grant_invoker(cfg, fns[spec.name], f"{spec.name}-invoker-iap",
                      iap_agent.email.apply(lambda email: f"serviceAccount:{email}"))
    default = backends["runs"]  # a path no route matches: the functions answer 404 ROUTE_NOT_FOUND
    url_map = gcp.compute.URLMap(
        "endpoint", project=cfg.project, name="agent-endpoint", default_service=default.id,
        host_rules=[gcp.compute.URLMapHostRuleArgs(hosts=["*"], path_matcher="routes")],
        path_matchers=[gcp.compute.URLMapPathMatcherArgs(
            name="routes", default_service=default.id,
            route_rules=[gcp.compute.URLMapPathMatcherRouteRuleArgs(
                priority=i + 1, service=backends[rule.function].id,
                match_rules=[gcp.compute.URLMapPathMatcherRouteRuleMatchRuleArgs(
                    path_template_match=rule.template)])
                for i, rule in enumerate(rules)])],
        opts=opts)
    address = gcp.compute.GlobalAddress("endpoint-ip", project=cfg.project, name="agent-endpoint-ip", opts=opts)
    if cfg.endpoint_domain:
        cert = gcp.compute.ManagedSslCertificate(
            "endpoint-cert", project=cfg.project, name="agent-endpoint-cert",
            managed=gcp.compute.ManagedSslCertificateManagedArgs(domains=[cfg.endpoint_domain]), opts=opts)
        proxy: gcp.compute.TargetHttpsProxy | gcp.compute.TargetHttpProxy = gcp.compute.TargetHttpsProxy(
            "endpoint-proxy", project=cfg.project, name="agent-endpoint-proxy", url_map=url_map.id,
            ssl_certificates=[cert.id], opts=opts)
        port = "443"
    else:
        proxy = gcp.compute.TargetHttpProxy("endpoint-proxy", project=cfg.project, name="agent-endpoint-proxy",
                                            url_map=url_map.id, opts=opts)
        port = "80"
    rule = gcp.compute.GlobalForwardingRule(
        "endpoint-rule", project=cfg.project, name="agent-endpoint-rule", load_balancing_scheme="EXTERNAL_MANAGED",
        ip_address=address.address, port_range=port, target=proxy.id, opts=opts)
    return {"url_map": url_map, "address": address, "rule": rule, "backends": backends, "rules": rules}
