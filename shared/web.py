"""The HTTP edge: dispatch by the route table, JSON bodies, errors, responses.

:func:`dispatch` serves a request by the route table (``shared/routes.py``) for every deployed
function (:func:`function_entry`) and the dev server. The handlers in ``functions/`` parse,
authenticate, call the domain and render; these helpers make the parsing and rendering uniform:
every error is a JSON body ``{"ok": false, "error": {"code", "message", "details"?}}``, its status
and headers given by :func:`http_status`, the one mapping of domain errors (``shared/errors.py``)
to HTTP.

What the web framework answers by itself gets the same envelope: ``shared.http_errors``.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, TypeVar, cast

import flask
from pydantic import BaseModel, ValidationError

from shared import query, routes
from shared.errors import (
    Conflict,
    DomainError,
    Forbidden,
    Gone,
    Internal,
    InvalidInput,
    LimitExceeded,
    MethodNotAllowed,
    NotFound,
    PayloadTooLarge,
    StoredValueInvalid,
    TransactionContention,
    Unauthenticated,
    Unavailable,
    Unprocessable,
    UnsupportedMediaType,
    UpstreamFailed,
)
from shared.formats import validation_problems
from shared.http_errors import INTERNAL_ERROR, shown_path
from shared.http_errors import json_response as json_response  # re-exported: the entry points render with it
from shared.logs import log_context, trace_fields

log = logging.getLogger("agent_runtime.web")

M = TypeVar("M", bound=BaseModel)
Handler = Callable[[flask.Request], flask.Response]


HTTP_STATUS: dict[type[DomainError], int] = {
    DomainError: 400, InvalidInput: 400, Unauthenticated: 401, Forbidden: 403, NotFound: 404, MethodNotAllowed: 405,
    Conflict: 409, StoredValueInvalid: 409, Gone: 410, PayloadTooLarge: 413, UnsupportedMediaType: 415,
    Unprocessable: 422, LimitExceeded: 429,
    Internal: 500, UpstreamFailed: 502, Unavailable: 503,
}
"""The one mapping of domain errors to HTTP: a subclass answers as its nearest listed ancestor."""


def http_status(err: DomainError) -> tuple[int, dict[str, str]]:
    """The status and headers ``err`` answers with: ``Allow`` on a 405 (RFC 9110 15.5.6),
    ``Retry-After`` on a 429 (the limit's own delay) and a 503 (one second)."""
    status = next(HTTP_STATUS[cls] for cls in type(err).__mro__ if cls in HTTP_STATUS)
    headers: dict[str, str] = {}
    if isinstance(err, MethodNotAllowed):
        headers["Allow"] = ", ".join(err.allowed)
    if isinstance(err, LimitExceeded):
        headers["Retry-After"] = str(err.retry_after_s)
    elif status == 503:
        headers["Retry-After"] = "1"
    return status, headers


def error_response(err: DomainError) -> flask.Response:
    status, headers = http_status(err)
    return json_response(err.to_json(), status, headers)


MAX_JSON_DEPTH = 64
"""How deeply a request body's arrays and objects may nest. Checked on the bytes before the JSON
parser runs: the parser recurses once per level (a body 1,000 levels deep raised ``RecursionError``,
a 500), and no request contract of the API nests more than a few levels."""

_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_JSON_BRACKET = re.compile(rb"[\[\]{}]")


def json_depth_exceeds(raw: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether the JSON text ``raw`` nests arrays and objects deeper than ``limit`` (brackets inside
    strings do not count). Linear in ``raw``; no recursion."""
    if raw.count(b"[") + raw.count(b"{") <= limit:
        return False
    depth = 0
    for m in _JSON_BRACKET.finditer(_JSON_STRING.sub(b'""', raw)):
        if m.group() in (b"[", b"{"):
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False


class _NonFinite(ValueError):
    pass


def _not_json(token: str) -> Any:
    """Python's JSON parser reads ``NaN``, ``Infinity`` and ``-Infinity``; JSON has no such numbers
    (no value of the API may be one: it could never be answered as JSON, nor stored in SQLite)."""
    raise _NonFinite(token)


def _finite(literal: str) -> float:
    """A JSON number with a fraction or exponent; one too large for a double (``1e400``) is
    refused like ``Infinity`` (Python reads it as infinity, which no answer or store can hold: it
    was stored as ``null``)."""
    value = float(literal)
    if math.isinf(value):
        raise _NonFinite(f"{literal[:40]} (beyond the largest double)")
    return value


def read_json_body(request: flask.Request, max_bytes: int, *, optional: bool = False) -> dict[str, Any]:
    """The request's JSON object body, or a 4xx naming what is wrong: 413 beyond ``max_bytes``
    (read no further), 400 ``INVALID_JSON`` nested deeper than :data:`MAX_JSON_DEPTH` (checked before
    parsing) or not a JSON object. ``optional``: a route whose
    every field has a default (``cancel``) also takes no body at all, read as ``{}``."""
    length = request.content_length
    if length is not None and length > max_bytes:
        raise PayloadTooLarge(f"request body is {length} bytes; the limit is {max_bytes}")
    raw = request.stream.read(max_bytes + 1)
    if len(raw) > max_bytes:
        raise PayloadTooLarge(f"request body exceeds the limit of {max_bytes} bytes")
    mimetype = request.mimetype or ""
    if raw and mimetype and mimetype != "application/json" and not mimetype.endswith("+json"):
        raise UnsupportedMediaType(f"expected Content-Type application/json, got {mimetype}")
    coding = (request.headers.get("Content-Encoding") or "").strip().lower()
    if raw and coding not in ("", "identity"):  # a compressed body read as JSON said only "not valid JSON"
        raise UnsupportedMediaType(f"Content-Encoding {coding[:40]} is not supported: send the JSON body "
                                   "uncompressed", details={"field": "Content-Encoding"})
    if not raw.strip():
        if optional:
            return {}
        raise InvalidInput("request body is empty; expected a JSON object", code="INVALID_JSON")
    if json_depth_exceeds(raw):
        raise InvalidInput(f"request body nests arrays and objects more than {MAX_JSON_DEPTH} levels deep; the "
                           f"limit is {MAX_JSON_DEPTH}", code="INVALID_JSON",
                           details={"limit": "maxDepth", "maxDepth": MAX_JSON_DEPTH})
    try:
        data = json.loads(raw, parse_constant=_not_json, parse_float=_finite)
    except _NonFinite as exc:
        raise InvalidInput(f"request body is not valid JSON: {exc} is not a JSON number (RFC 8259)",
                           code="INVALID_JSON") from None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, an integer of more than 4,300 digits
        raise InvalidInput(f"request body is not valid JSON: {str(exc)[:200]}", code="INVALID_JSON") from None
    if not isinstance(data, dict):
        raise InvalidInput("request body must be a JSON object", code="INVALID_JSON")
    if _SURROGATE_ESCAPE.search(raw):
        where = _lone_surrogate(data, ())
        if where is not None:
            field = ".".join(where) or "(body)"
            raise InvalidInput(f"{field} holds a lone UTF-16 surrogate escape (\\ud800-\\udfff without its pair), "
                               "which is not Unicode text", code="INVALID_JSON", details={"field": field})
    return data


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
"""A JSON escape of a UTF-16 surrogate: legal JSON, and a pair of them is one character, but one
alone decodes to a Python string that no store can encode (the write answered 500)."""
_SURROGATE = re.compile("[\ud800-\udfff]")


def _lone_surrogate(value: Any, where: tuple[str, ...]) -> tuple[str, ...] | None:
    """Where in ``value`` (a parsed body, nested at most :data:`MAX_JSON_DEPTH` levels) a string or
    key holds a lone surrogate (dotted as pydantic names fields), or None."""
    if isinstance(value, str):
        return where if _SURROGATE.search(value) else None
    items: list[tuple[str, Any]] = []
    if isinstance(value, dict):
        bad_key = next((k for k in value if _SURROGATE.search(k)), None)
        if bad_key is not None:
            return (*where, bad_key.encode("utf-8", "backslashreplace").decode())
        items = list(value.items())
    elif isinstance(value, list):
        items = [(str(i), v) for i, v in enumerate(value)]
    return next((found for key, item in items if (found := _lone_surrogate(item, (*where, key))) is not None), None)


def validation_details(exc: ValidationError) -> list[dict[str, str]]:
    return [{"field": field, "message": message} for field, message in validation_problems(exc, root="(body)")]


def parse_model(model: type[M], data: Any) -> M:
    """Validate ``data`` into ``model``; a failure is a 400 naming every offending field."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        details = validation_details(exc)
        fields = ", ".join(d["field"] for d in details)
        raise InvalidInput(f"invalid request: {fields}", code="INVALID_REQUEST",
                         details={"errors": details}) from None


def http_endpoint(fn: Handler) -> Handler:
    """Render a DomainError as its JSON error (:func:`http_status`); log anything unexpected and answer
    a 500 JSON error."""

    @functools.wraps(fn)
    def wrapper(request: flask.Request) -> flask.Response:
        with log_context(**trace_fields(dict(request.headers.items()))):
            try:
                return fn(request)
            except DomainError as err:
                response = error_response(err)
                if response.status_code >= 500:
                    log.error("%s: %s", err.code, err.message)
                elif isinstance(err, StoredValueInvalid):  # the data's fault, not the caller's: say which
                    log.warning("%s serving %s %s: %s", err.code, request.method, shown_path(request.path),
                                err.message)
                return response
            except TransactionContention as exc:
                # Concurrent writers on the same documents outlasted the retries: nothing was
                # written, so the client may retry the request as is.
                log.warning("store contention serving %s %s: %s", request.method, shown_path(request.path), exc)
                return error_response(Unavailable("too many concurrent changes to the same objects; retry",
                                                  code="CONTENTION"))
            except Exception:
                log.exception("unhandled error serving %s %s", request.method, shown_path(request.path))
                return json_response(INTERNAL_ERROR, 500)

    return wrapper


RouteHandler = Callable[[flask.Request, Mapping[str, str]], flask.Response]
"""What a route's handler in the table is: ``handler(request, path_params)``."""


def dispatch(request: flask.Request, table: Iterable[routes.Route]) -> flask.Response:
    """Serve ``request`` by the route table (``shared/routes.py``): a path no route matches is a 404
    ``ROUTE_NOT_FOUND`` whatever the method, a path some route matches with another method a 405
    with ``Allow``; a query string the route does not take a 400 ``INVALID_QUERY`` (``shared/query.py``);
    otherwise the route's handler is imported (on its first request) and called with
    the path parameters. One dispatch for every deployed function and the dev server."""
    found = routes.match(request.method, request.path, table)
    if found.route is None:
        if found.allowed:
            raise MethodNotAllowed(request.method, found.allowed)
        raise NotFound(f"no route for {request.method} {shown_path(request.path)}", code="ROUTE_NOT_FOUND")
    query.parse_request(found.route, request)  # 400 INVALID_QUERY before the handler runs
    handler = cast(RouteHandler, routes.resolve(found.route.handler))
    return handler(request, found.params)


@functools.lru_cache(maxsize=64)
def function_entry(name: str) -> Handler:
    """The HTTP entry point of the deployed function ``name`` (main.py): its routes in the table, read
    per request, so the table is the only place a route is added."""

    @http_endpoint
    def entry(request: flask.Request) -> flask.Response:
        return dispatch(request, routes.routes_of(name))

    entry.__name__ = entry.__qualname__ = name
    return entry


MAX_IDEMPOTENCY_KEY = 255


def idempotency_key(request: flask.Request) -> str | None:
    """The ``Idempotency-Key`` header (1..255 visible ASCII characters), if sent."""
    key = request.headers.get("Idempotency-Key")
    if key is None:
        return None
    key = key.strip()
    if not key or len(key) > MAX_IDEMPOTENCY_KEY or not key.isascii() or not key.isprintable():
        raise InvalidInput("Idempotency-Key must be 1-255 visible ASCII characters", code="INVALID_IDEMPOTENCY_KEY")
    return key


def wants_sse(request: flask.Request) -> bool:
    """The client asked for Server-Sent Events (``Accept: text/event-stream``); NDJSON otherwise.
    A media type's parameters other than its quality (``text/event-stream; charset=utf-8``, as some
    SSE clients send) do not make it another type (werkzeug alone matched none and answered NDJSON)."""
    from werkzeug.datastructures import MIMEAccept

    offered = MIMEAccept([(value.split(";", 1)[0].strip(), quality) for value, quality in request.accept_mimetypes])
    return offered.best_match(["application/x-ndjson", "text/event-stream"],
                              default="application/x-ndjson") == "text/event-stream"


def sse_frame(event: dict[str, Any]) -> bytes:
    """One event as a Server-Sent Events frame: ``event`` = its type, ``id`` = its seq (what an
    ``EventSource`` sends back as ``Last-Event-ID`` when it reconnects), ``data`` = the event as JSON.
    A heartbeat (no seq) is a comment line: every client ignores it, and it keeps proxies from
    closing an idle connection."""
    if event.get("type") == "heartbeat" and "seq" not in event:
        return b": heartbeat\n\n"
    data = json.dumps(event, ensure_ascii=False, separators=(",", ":"))
    return f"event: {event.get('type', 'message')}\nid: {event.get('seq', '')}\ndata: {data}\n\n".encode()


SSE_RETRY_MS = 1000
"""What the events routes tell an ``EventSource`` to wait before it reconnects (``retry``)."""


def sse_response(events: Iterator[dict[str, Any]], *, retry_ms: int | None = None) -> flask.Response:
    """The same events as Server-Sent Events (:func:`sse_frame`): a client that reconnects resumes
    with ``Last-Event-ID`` through the events route. ``retry_ms``: sent first, how long an
    ``EventSource`` waits before it reconnects when the stream closes."""
    def frames() -> Iterator[bytes]:
        if retry_ms is not None:
            yield f"retry: {retry_ms}\n\n".encode()
        for ev in events:
            yield sse_frame(ev)

    return event_stream_response(frames())


def event_stream_response(frames: Iterator[bytes]) -> flask.Response:
    """A ``text/event-stream`` response of ready frames, sent as they come (no proxy buffering)."""
    resp = flask.Response(frames, mimetype="text/event-stream")
    resp.headers["Cache-Control"] = "no-store"
    resp.headers["X-Accel-Buffering"] = "no"
    return resp


def ndjson_response(lines: Iterator[bytes]) -> flask.Response:
    resp = flask.Response(lines, mimetype="application/x-ndjson")
    resp.headers["Cache-Control"] = "no-store"
    resp.headers["X-Accel-Buffering"] = "no"
    return resp
