"""The agent card (``GET /.well-known/agent-card.json``, docs/a2a.md): both transports at ``/a2a``,
streaming, the skills (the tool registry's tools and plan sessions) and the security scheme our
auth accepts (a bearer token: a Firebase ID token, or ``dev:<uid>`` under ``make dev``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from a2a.types import a2a_pb2 as pb

from shared.a2a import inputs

if TYPE_CHECKING:
    from shared.runtime import Runtime

PROTOCOL_VERSION = "1.0"
PATH = "/a2a"
OUTPUT_MODES = ["text/plain", "application/json", "image/png", "image/jpeg"]
"""The answer's text or JSON object, and the files the model answers with (images, mostly; a
file keeps the media type the model gave it)."""
SCHEME = "bearer"
AGENT_VERSION = "1.0.0"


def card_json(rt: Runtime, base_url: str) -> dict[str, Any]:
    """The card as its JSON (camelCase, as ``/.well-known/agent-card.json`` serves it)."""
    from google.protobuf.json_format import MessageToDict

    card: dict[str, Any] = MessageToDict(build_card(rt, base_url), preserving_proto_field_name=False)
    return card


def build_card(rt: Runtime, base_url: str) -> pb.AgentCard:
    """The card for a server reached at ``base_url`` (``A2A_PUBLIC_URL`` when set, else the
    request's own scheme and host)."""
    base = base_url.rstrip("/")
    local = rt.settings.auth_mode == "local"
    bearer = pb.HTTPAuthSecurityScheme(
        scheme="Bearer", bearer_format="dev:<uid>" if local else "Firebase ID token",
        description=("make dev: any 'dev:<uid>' token signs in as that user" if local else
                     "a Firebase ID token of the user the agent acts for (Authorization: Bearer <token>)"))
    skills = [pb.AgentSkill(id="chat", name="Chat with tools",
                            description="Answers a request, calling tools as needed; side effects wait for "
                                        "approval (the task is input-required until the caller or the user "
                                        "decides)", tags=["chat", "tools", "approvals"]),
              pb.AgentSkill(id="plan", name="Plans",
                            description="Makes and executes a plan of several steps for a larger objective "
                                        "(agent_create_plan; plan sessions)", tags=["plan"])]
    for tool in sorted(rt.registry, key=lambda t: t.name):
        if tool.host:
            continue
        skills.append(pb.AgentSkill(
            id=f"tool:{tool.name}", name=tool.name, description=tool.description.split("\n", 1)[0][:500],
            tags=["tool", "side-effect" if tool.side_effect else "read-only"]))
    return pb.AgentCard(
        name="Agent Runtime",
        description="A durable agent on Gemini: tasks survive restarts and any instance serves any request; "
                    "side effects wait for approval (input-required).",
        version=AGENT_VERSION,
        supported_interfaces=[
            pb.AgentInterface(url=base + PATH, protocol_binding="JSONRPC", protocol_version=PROTOCOL_VERSION),
            pb.AgentInterface(url=base + PATH, protocol_binding="HTTP+JSON", protocol_version=PROTOCOL_VERSION),
        ],
        capabilities=pb.AgentCapabilities(streaming=True, push_notifications=True),
        security_schemes={SCHEME: pb.SecurityScheme(http_auth_security_scheme=bearer)},
        security_requirements=[pb.SecurityRequirement(schemes={SCHEME: pb.StringList()})],
        default_input_modes=inputs.INPUT_MODES,
        default_output_modes=OUTPUT_MODES,
        skills=skills,
    )
