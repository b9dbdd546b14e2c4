"""The OpenAPI 3.1 document of the HTTP API: its paths from the route table (``shared/routes.py``),
its schemas from the pydantic contracts the routes name.

Response schemas are closed: every object schema reachable from a response (or an NDJSON event)
sets ``additionalProperties: false`` unless its model deliberately keeps extra fields (the goals
agent's open plan objects), so a response with an unexpected field does not match the document.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any, Union, get_args

from pydantic import BaseModel, Field, TypeAdapter
from pydantic.json_schema import models_json_schema

from shared import routes
from shared.connectors.credentials import PROVIDERS
from shared.events.loop import HeartbeatEvent
from shared.events.run import RunEvent
from shared.events.session import SessionEvent
from shared.openapi_links import LINKS
from shared.responses import ErrorResponse
from shared.routes import NAME_PATTERN
from shared.usage.params import MAX_RANGE_DAYS
from shared.usage.views import RUN_RECORD_NOT_SERVED

REF = "#/components/schemas/{model}"


def _json(schema_ref: str) -> dict[str, Any]:
    return {"application/json": {"schema": {"$ref": schema_ref}}}


def _errors(*codes: int) -> dict[str, Any]:
    return {str(c): {"description": "error", "content": _json("#/components/schemas/ErrorResponse")} for c in codes}


LIMIT_CODES: dict[str, tuple[str, ...]] = {
    # Which 429 codes each operation can answer (docs/limits.md); any other route: RATE_LIMITED only.
    "run": ("TOO_MANY_ACTIVE_RUNS", "DAILY_TOKEN_LIMIT"),
    "stream": ("TOO_MANY_ACTIVE_RUNS", "DAILY_TOKEN_LIMIT"),
    "createSession": ("TOO_MANY_ACTIVE_SESSIONS", "DAILY_TOKEN_LIMIT", "BUDGET_EXCEEDED"),
    "refineSession": ("DAILY_TOKEN_LIMIT", "BUDGET_EXCEEDED"),
    "confirmSession": ("DAILY_TOKEN_LIMIT",),
    "goals": ("BUDGET_EXCEEDED",),  # public (IAM): no request limit, but a user's money caps (docs/budgets.md)
}


def _too_many_requests(operation_id: str, *, rate_limited: bool = True) -> dict[str, Any]:
    codes = ", ".join((*(("RATE_LIMITED",) if rate_limited else ()), *LIMIT_CODES.get(operation_id, ())))
    return {"description": f"a per-user limit refused the request ({codes}); nothing was created",
            "headers": {"Retry-After": {"description": "seconds until a retry may succeed",
                                        "required": True, "schema": {"type": "integer", "minimum": 1}}},
            "content": _json("#/components/schemas/ErrorResponse")}


def _refs(node: Any) -> Iterator[str]:
    """Names of the component schemas ``node`` refers to."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
            yield ref.rsplit("/", 1)[-1]
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def _close_response_schemas(schemas: dict[str, Any], responses: list[Any]) -> None:
    """``additionalProperties: false`` on every object schema reachable from a response, unless
    its model says otherwise (``extra="allow"`` gives ``true``). Stored records ignore unknown
    fields when read; what the API answers is exactly what the document lists."""
    seen: set[str] = set()
    todo = [name for r in responses for name in _refs(r)]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        schema = schemas[name]
        if schema.get("type") == "object" and "properties" in schema:
            schema.setdefault("additionalProperties", False)
        todo.extend(_refs(schema))


def _require_discriminators(schemas: dict[str, Any]) -> None:
    """A tagged union's tag is required in each member: pydantic picks the member by it (a message
    without ``role`` is refused even where ``role`` has a default), so the document says so."""
    def walk(node: Any) -> None:
        if isinstance(node, dict):
            discriminator = node.get("discriminator")
            if isinstance(discriminator, dict):
                for ref in discriminator.get("mapping", {}).values():
                    member = schemas.get(str(ref).rsplit("/", 1)[-1])
                    tag = discriminator["propertyName"]
                    if member is not None and tag in member.get("properties", {}):
                        member["required"] = sorted({*member.get("required", []), tag})
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
    walk(schemas)


def _components(table: tuple[routes.Route, ...]) -> dict[str, Any]:
    """Component schemas of every model the routes read or answer, and of the event streams."""
    models: list[tuple[type[BaseModel], Any]] = [(ErrorResponse, "serialization")]
    for route in table:
        named = [(route.request, "validation")] + [(r.model, "serialization") for r in route.replies]
        for target, mode in named:
            if target is not None and (routes.resolve(target), mode) not in models:
                models.append((routes.resolve(target), mode))
    _, defs = models_json_schema(models, ref_template=REF, by_alias=True)
    schemas: dict[str, Any] = dict(defs.get("$defs", {}))
    event_schema = TypeAdapter(stream_lines(RunEvent)).json_schema(ref_template=REF, mode="serialization")
    schemas.update(event_schema.pop("$defs", {}))
    schemas["RunEvent"] = event_schema
    session_events = TypeAdapter(stream_lines(SessionEvent)).json_schema(ref_template=REF, mode="serialization")
    for name, schema in session_events.pop("$defs", {}).items():
        schemas.setdefault(name, schema)
    schemas["SessionEvent"] = session_events
    record = schemas["RunView"]
    for hidden in RUN_RECORD_NOT_SERVED:
        alias = "".join(w.capitalize() if i else w for i, w in enumerate(hidden.split("_")))
        record["properties"].pop(alias, None)
        if alias in record.get("required", []):
            record["required"].remove(alias)
    if "Lease" not in set(_refs({k: v for k, v in schemas.items() if k != "Lease"})):
        schemas.pop("Lease", None)
    _require_discriminators(schemas)
    return schemas


def stream_lines(events: Any) -> Any:
    """What a stream of ``events`` (a discriminated union) carries: those events and the heartbeat a
    follow sends while it is quiet (stream only, no ``seq``)."""
    members = get_args(get_args(events)[0])
    return Annotated[Union[(*members, HeartbeatEvent)], Field(discriminator="type")]


def _query_parameter(p: routes.Param) -> dict[str, Any]:
    """A query parameter of the route table as the document states it (``shared/query.py`` reads it
    so)."""
    schema: dict[str, Any]
    if p.kind == "integer":
        schema = {"type": "integer", "minimum": p.minimum, "maximum": p.maximum}
    elif p.kind == "boolean":
        schema = {"type": "boolean"}
    elif p.kind == "enum":
        schema = {"type": "string", "enum": list(p.values)}
    elif p.kind == "instant":
        # Each branch typed: a generated client (openapi-python-client) then takes a datetime or a date.
        schema = {"anyOf": [{"type": "string", "format": "date-time"}, {"type": "string", "format": "date"}]}
    else:
        schema = {"type": "string", "minLength": 1}
    if p.default is not None:
        schema["default"] = p.default
    out: dict[str, Any] = {"name": p.name, "in": "query", "required": False, "schema": schema}
    if p.description:
        out["description"] = p.description
    return out


def _parameters() -> dict[str, list[dict[str, Any]]]:
    """Header parameters per operationId (path and query parameters come from the route table)."""
    idem = {"name": "Idempotency-Key", "in": "header", "required": False,
            "description": "1-255 visible ASCII characters (spaces inside allowed), the caller's own (another user's "
                           "key of the same name is another key). A repeat with the same body within 24 h returns "
                           "the same run (header Idempotent-Replayed: true); with another body it is a 422 "
                           "IDEMPOTENCY_KEY_REUSED. After 24 h the key is new again.",
            "schema": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[ -~]*[!-~][ -~]*$"}}
    last_event_id = {"name": "Last-Event-ID", "in": "header", "required": False,
                     "schema": {"type": "string", "pattern": "^[0-9]*$"},
                     "description": "the seq of the last event read (an EventSource sends it when it reconnects); "
                                    "wins over after and lastEventId"}
    agui_resume = {**last_event_id, "schema": {"type": "string", "pattern": "^[0-9]+:[0-9]+:[0-9]+$"},
                   "description": "the id of the last AG-UI event read: the same input again reads on after it "
                                  "(nothing is started or decided again)"}
    session_idem = {**idem, "description": "1-255 visible ASCII characters, the caller's own. A repeat with the same "
                    "body returns the session it created (header Idempotent-Replayed: true; nothing is planned "
                    "again) for as long as that session is stored; with another body it is a 422 "
                    "IDEMPOTENCY_KEY_REUSED."}
    return {"run": [idem], "stream": [idem], "createSession": [session_idem], "getRunEvents": [last_event_id],
            "getSessionEvents": [last_event_id], "agui": [idem, agui_resume]}


PATH_SCHEMAS: dict[str, dict[str, Any]] = {"provider": {"type": "string", "enum": list(PROVIDERS)},
                                           "/api/integrations/mcp/{name}": {"type": "string", "pattern": NAME_PATTERN},
                                           "/api/integrations/a2a/{name}": {"type": "string", "pattern": NAME_PATTERN},
                                           "/api/agent/webhooks/{name}": {"type": "string", "pattern": NAME_PATTERN},
                                           "/api/agent/schedules/{name}": {"type": "string", "pattern": NAME_PATTERN},
                                           "/api/admin/users/{uid}": {"type": "string",
                                                                      "pattern": f"^{routes.UID_SEGMENT}$"}}
"""Path parameters that are not plain strings (ids): by name, or by the path up to the parameter."""


def _path_schema(path: str, name: str) -> dict[str, Any]:
    head = path[:path.index("{" + name + "}") + len(name) + 2]
    return PATH_SCHEMAS.get(head) or PATH_SCHEMAS.get(name) or {"type": "string"}

DESCRIPTIONS = {
    "getUsage": "The caller's model calls (usage ledger) in [from, to), summed per group. "
                "from/to: RFC 3339 with a zone or YYYY-MM-DD (UTC); default the last 30 days. "
                f"from must be before to and at most {MAX_RANGE_DAYS} days earlier (400 INVALID_QUERY otherwise).",
}
"""Descriptions that quote a limit of the code (the table holds the others)."""


def _reply(reply: routes.Reply) -> dict[str, Any]:
    content: dict[str, Any]
    if reply.model is not None:
        content = _json(REF.format(model=routes.resolve(reply.model).__name__))
    elif reply.stream is not None:
        # NDJSON: one event per line. The schema describes the whole body read as a JSON array of its
        # lines, as OpenAPI 3.2 reads ``schema`` for sequential media types (``itemSchema`` per line), so
        # a client (and the fuzz test's deserializer, tests/fuzz) validates every line, not only one.
        content = {"application/x-ndjson": {"schema": {"type": "array", "items": {"$ref": REF.format(
            model=reply.stream)}}}}
        if reply.sse:
            content["text/event-stream"] = {"schema": {"type": "string"}}
    elif reply.sse:  # an event stream of another protocol (AG-UI): its frames, documented by the route
        content = {"text/event-stream": {"schema": dict(reply.schema or {"type": "string"})}}
    else:
        content = {"application/json": {"schema": dict(reply.schema or {})}}
    return {"description": reply.description, "content": content}


def _operation(route: routes.Route, parameters: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    op: dict[str, Any] = {"operationId": route.operation_id}
    if route.public:
        op["security"] = []
    description = DESCRIPTIONS.get(route.operation_id, route.description)
    if description:
        op["description"] = description
    params = [{"name": name, "in": "path", "required": True, "schema": _path_schema(route.path, name)}
              for name in route.path_params] + [_query_parameter(p) for p in route.query] \
        + parameters.get(route.operation_id, [])
    if params:
        op["parameters"] = params
    if route.request is not None:
        op["requestBody"] = {"required": route.body_required,
                             "content": _json(REF.format(model=routes.resolve(route.request).__name__))}
    responses = {str(r.status): _reply(r) for r in route.replies}
    links = LINKS.get(route.operation_id)
    if links:
        responses[str(route.replies[0].status)]["links"] = links
    # 400: any route (a query parameter it does not take, INVALID_QUERY); 500: any route, logged;
    # 404: a route with a free-form name in its path, which the HTTP layer does not route when the
    # name holds a line break (ROUTE_NOT_FOUND before the handler can name the 400); 409: any
    # authenticated route, when a stored object it must read is not a valid record
    # (STORED_VALUE_INVALID, shared/state/record_base.py; lists leave such objects out).
    free_form = any(segment == routes.ANY_SEGMENT for segment in route.segments.values())
    errors = {400, *route.errors, *((404,) if free_form else ()), *(() if route.public else (409,))}
    op["responses"] = {**responses, **_errors(*sorted(errors)), **_errors(500)}
    if not route.public:  # every authenticated route counts against the request limit
        op["responses"]["429"] = _too_many_requests(route.operation_id)
    elif route.operation_id in LIMIT_CODES:
        op["responses"]["429"] = _too_many_requests(route.operation_id, rate_limited=False)
    return op


def build_openapi() -> dict[str, Any]:
    """The document of every route of the table (``shared/routes.py``), schemas from the pydantic models."""
    table = routes.ROUTES
    schemas = _components(table)
    bearer: list[dict[str, list[str]]] = [{"firebaseIdToken": []}, {"firebaseSession": []}]
    parameters = _parameters()
    paths: dict[str, Any] = {}
    for route in table:
        paths.setdefault(route.path, {})[route.method.lower()] = _operation(route, parameters)
    _close_response_schemas(schemas, [op["responses"] for item in paths.values() for op in item.values()])
    return {
        "openapi": "3.1.0",
        "info": {"title": "Agent Runtime API", "version": "1.0.0",
                 "description": "Durable Gemini agent runs: run, stream, read runs and events, approve; "
                                "the user's integrations; the goals agent."},
        "security": bearer,
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "firebaseIdToken": {"type": "http", "scheme": "bearer", "bearerFormat": "Firebase ID token"},
                "firebaseSession": {"type": "apiKey", "in": "cookie", "name": "__session"},
            },
        },
    }
