"""The whole stack: ``build()`` declares every resource of one environment and exports its URLs."""

from __future__ import annotations

import pulumi

from agent_infra import (
    apis,
    catalog,
    config,
    database,
    endpoint,
    functions,
    hostagent,
    iam,
    messaging,
    monitoring,
    sandbox,
    scheduler,
    secrets,
)


def build() -> dict[str, pulumi.Resource]:
    """Declare the stack selected by Pulumi (its ``Pulumi.<stack>.yaml``). Returns the functions."""
    cfg = config.load()
    services = apis.enable_apis(cfg)
    enabled = list(services.values())
    accounts = iam.create_accounts(cfg, enabled)
    project_grants = iam.grant_project_roles(cfg, accounts)
    # Only the Secret Manager API: a first deploy creates the secrets alone (docs/deploying.md).
    stored = secrets.create_secrets(cfg, [services["secretmanager.googleapis.com"]])
    readers = secrets.grant_access(stored, accounts)
    db = database.create_database(cfg, enabled)
    database.create_indexes(cfg, db)
    database.create_ttl_policies(cfg, db)
    database.create_backups(cfg, db)
    topics = messaging.create_topics(cfg, enabled)
    publishers = messaging.grant_publishers(
        cfg, topics, accounts, [s.name for s in config.CATALOG if s.publishes_resume])
    bucket, source = functions.upload_bundle(cfg, accounts, enabled)
    # The workspaces' service first: the functions that run tools are told its URL.
    box = sandbox.create_sandbox(cfg, enabled)
    callers = sandbox.grant_callers(cfg, box, accounts)
    # A function must be able to read its secrets and store before its first revision starts.
    fns = functions.create_functions(cfg, accounts, bucket, source, stored,
                                     [*enabled, *project_grants, *readers, *publishers, db, *callers], box.url)
    invokers = iam.grant_invokers(cfg, fns, accounts)
    push = messaging.create_push(cfg, topics, fns["resume"], cfg.scaling["resume"].timeout_s, accounts,
                                 [invokers["resume"]])
    sweep = scheduler.create_sweep_job(cfg, topics, [services["cloudscheduler.googleapis.com"], push])
    scheduler.create_schedule_tick_job(cfg, topics, [services["cloudscheduler.googleapis.com"], push])
    host_agent = hostagent.create_host_agent(cfg, stored, enabled)
    # One endpoint for every route (a load balancer whose URL map comes from the route table).
    api = endpoint.create_endpoint(cfg, fns, catalog.load_route_table().ROUTES, [*enabled, *invokers.values()])
    watch = monitoring.create_monitoring(cfg, [services["logging.googleapis.com"],
                                               services["monitoring.googleapis.com"], *fns.values()])

    pulumi.export("environment", cfg.environment)
    pulumi.export("urls", {name: fn.service_config.apply(lambda sc: sc.uri if sc else None)
                           for name, fn in fns.items()})
    pulumi.export("runUrl", fns["run"].service_config.apply(lambda sc: sc.uri if sc else None))
    pulumi.export("backendServiceAccount", cfg.backend_invoker)
    pulumi.export("resumeTopic", topics.resume.name)
    pulumi.export("deadLetterSubscription", topics.dead_letter_sub.name)
    pulumi.export("sweepJob", sweep.name)
    pulumi.export("hostAgentJob", host_agent.job.name)
    pulumi.export("hostAgentLogBucket", host_agent.logs.name)
    pulumi.export("dashboard", watch.dashboard.id)
    pulumi.export("sandboxUrl", box.url)
    pulumi.export("endpointAddress", api["address"].address)
    pulumi.export("endpointUrl", f"https://{cfg.endpoint_domain}" if cfg.endpoint_domain
                  else api["address"].address.apply(lambda ip: f"http://{ip}"))
    pulumi.export("workspaceSnapshotBucket", box.snapshots.name)
    return dict(fns)
