"""The resume topic, its push subscription to the resume function, and the dead-letter path.

Why a push subscription rather than an Eventarc trigger: Eventarc owns the subscription it
creates, so its dead-letter policy and backoff cannot be declared here. ``resume`` is registered
with ``@functions_framework.cloud_event``, so functions-framework serves it as a CloudEvent
function whatever the deployment's signature type, and converts the raw Pub/Sub push body into
the same ``google.cloud.pubsub.topic.v1.messagePublished`` CloudEvent Eventarc would deliver
(the topic comes from the push URL's ``/projects/P/topics/T`` path).
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

from agent_infra.config import StackConfig
from agent_infra.iam import Accounts, member

MIN_BACKOFF = "10s"
MAX_BACKOFF = "600s"
MAX_ACK_DEADLINE_S = 600


@dataclass(frozen=True)
class Topics:
    resume: gcp.pubsub.Topic
    dead_letter: gcp.pubsub.Topic
    dead_letter_sub: gcp.pubsub.Subscription


def create_topics(cfg: StackConfig, depends_on: list[pulumi.Resource]) -> Topics:
    opts = pulumi.ResourceOptions(depends_on=depends_on)
    resume = gcp.pubsub.Topic("resume-topic", project=cfg.project, name=cfg.resume_topic,
                              message_retention_duration="86400s", opts=opts)
    dead = gcp.pubsub.Topic("resume-dead-letter", project=cfg.project, name=f"{cfg.resume_topic}-dead-letter",
                            opts=opts)
    # Messages published to a topic without subscriptions are lost: keep dead letters to inspect.
    retention = f"{cfg.retention.dead_letter_days * 86400}s"
    dead_sub = gcp.pubsub.Subscription(
        "resume-dead-letter-sub", project=cfg.project, name=f"{cfg.resume_topic}-dead-letter", topic=dead.name,
        message_retention_duration=retention, ack_deadline_seconds=60,
        expiration_policy=gcp.pubsub.SubscriptionExpirationPolicyArgs(ttl=""))
    return Topics(resume=resume, dead_letter=dead, dead_letter_sub=dead_sub)


def grant_publishers(cfg: StackConfig, topics: Topics, accounts: Accounts, names: list[str]) -> list[pulumi.Resource]:
    return [
        gcp.pubsub.TopicIAMMember(f"{name}-publishes-resume", project=cfg.project, topic=topics.resume.name,
                                  role="roles/pubsub.publisher", member=member(accounts.functions[name]))
        for name in names
    ]


def create_push(cfg: StackConfig, topics: Topics, resume_fn: gcp.cloudfunctionsv2.Function, timeout_s: int,
                accounts: Accounts, depends_on: list[pulumi.Resource]) -> gcp.pubsub.Subscription:
    """Subscribe resume to the topic, with retry backoff and a dead-letter topic."""
    uri = resume_fn.service_config.apply(lambda sc: (sc.uri if sc else None) or "")
    endpoint = pulumi.Output.all(uri, topics.resume.name).apply(
        lambda a: f"{a[0]}/projects/{cfg.project}/topics/{a[1]}")
    push = gcp.pubsub.Subscription(
        "resume-push", project=cfg.project, name=f"{cfg.resume_topic}-push", topic=topics.resume.name,
        # Pub/Sub waits this long for the push answer before it counts a delivery as failed.
        ack_deadline_seconds=min(MAX_ACK_DEADLINE_S, timeout_s),
        push_config=gcp.pubsub.SubscriptionPushConfigArgs(
            push_endpoint=endpoint,
            oidc_token=gcp.pubsub.SubscriptionPushConfigOidcTokenArgs(
                service_account_email=accounts.pusher.email, audience=uri)),
        retry_policy=gcp.pubsub.SubscriptionRetryPolicyArgs(minimum_backoff=MIN_BACKOFF, maximum_backoff=MAX_BACKOFF),
        dead_letter_policy=gcp.pubsub.SubscriptionDeadLetterPolicyArgs(
            dead_letter_topic=topics.dead_letter.id, max_delivery_attempts=cfg.max_delivery_attempts),
        message_retention_duration="86400s",
        expiration_policy=gcp.pubsub.SubscriptionExpirationPolicyArgs(ttl=""),
        opts=pulumi.ResourceOptions(depends_on=depends_on))
    _grant_service_agent(cfg, topics, push, accounts)
    return push


def _grant_service_agent(cfg: StackConfig, topics: Topics, push: gcp.pubsub.Subscription,
                         accounts: Accounts) -> None:
    """Pub/Sub's own agent forwards failed messages and signs the push tokens."""
    number = gcp.organizations.get_project_output(project_id=cfg.project).number
    agent = number.apply(lambda n: f"serviceAccount:service-{n}@gcp-sa-pubsub.iam.gserviceaccount.com")
    gcp.pubsub.TopicIAMMember("pubsub-agent-publishes-dead-letter", project=cfg.project,
                              topic=topics.dead_letter.name, role="roles/pubsub.publisher", member=agent)
    gcp.pubsub.SubscriptionIAMMember("pubsub-agent-acks-resume-push", project=cfg.project,
                                     subscription=push.name, role="roles/pubsub.subscriber", member=agent)
    gcp.serviceaccount.IAMMember("pubsub-agent-signs-push-tokens", service_account_id=accounts.pusher.name,
                                 role="roles/iam.serviceAccountTokenCreator", member=agent)
