"""HTTP edge helpers shared by the function entry points: JSON bodies, errors, responses.

The entry points in ``functions/`` parse, authenticate, call the domain and render; these helpers
make the parsing and rendering uniform: every error is a JSON body
``{"ok": false, "error": {"code", "message", "details"?}}`` with a 4xx/5xx status.

What the web framework answers by itself gets the same envelope: ``shared.http_errors``.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import flask
from pydantic import BaseModel, ValidationError

from shared.errors import (
    ApiError,
    BadRequest,
    MethodNotAllowed,
    PayloadTooLarge,
    TransactionContention,
    Unavailable,
    UnsupportedMediaType,
)
from shared.formats import validation_problems
from shared.http_errors import INTERNAL_ERROR, shown_path
from shared.http_errors import json_response as json_response  # re-exported: the entry points render with it
from shared.logs import log_context, trace_fields

log = logging.getLogger("agent_runtime.web")

M = TypeVar("M", bound=BaseModel)
Handler = Callable[[flask.Request], flask.Response]


def error_response(err: ApiError) -> flask.Response:
    headers = {"Retry-After": "1"} if err.status == 503 else {}
    return json_response(err.to_json(), err.status, {**headers, **err.headers})


def read_json_body(request: flask.Request, max_bytes: int, *, optional: bool = False) -> dict[str, Any]:
    """The request's JSON object body, or a 4xx naming what is wrong. ``optional``: a route whose
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
    if not raw.strip():
        if optional:
            return {}
        raise BadRequest("request body is empty; expected a JSON object", code="INVALID_JSON")
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadRequest(f"request body is not valid JSON: {exc}", code="INVALID_JSON") from None
    if not isinstance(data, dict):
        raise BadRequest("request body must be a JSON object", code="INVALID_JSON")
    return data


def validation_details(exc: ValidationError) -> list[dict[str, str]]:
    return [{"field": field, "message": message} for field, message in validation_problems(exc, root="(body)")]


def parse_model(model: type[M], data: Any) -> M:
    """Validate ``data`` into ``model``; a failure is a 400 naming every offending field."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        details = validation_details(exc)
        fields = ", ".join(d["field"] for d in details)
        raise BadRequest(f"invalid request: {fields}", code="INVALID_REQUEST",
                         details={"errors": details}) from None


def http_endpoint(fn: Handler) -> Handler:
    """Render ApiError as its JSON error; log anything unexpected and answer a 500 JSON error."""

    @functools.wraps(fn)
    def wrapper(request: flask.Request) -> flask.Response:
        with log_context(**trace_fields(dict(request.headers.items()))):
            try:
                return fn(request)
            except ApiError as err:
                if err.status >= 500:
                    log.error("%s: %s", err.code, err.message)
                return error_response(err)
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


def require_method(request: flask.Request, *methods: str) -> None:
    """405 (JSON, with ``Allow``) unless the request uses one of ``methods``."""
    if request.method not in methods:
        raise MethodNotAllowed(request.method, methods)


MAX_IDEMPOTENCY_KEY = 255


def idempotency_key(request: flask.Request) -> str | None:
    """The ``Idempotency-Key`` header (1..255 visible ASCII characters), if sent."""
    key = request.headers.get("Idempotency-Key")
    if key is None:
        return None
    key = key.strip()
    if not key or len(key) > MAX_IDEMPOTENCY_KEY or not key.isascii() or not key.isprintable():
        raise BadRequest("Idempotency-Key must be 1-255 visible ASCII characters", code="INVALID_IDEMPOTENCY_KEY")
    return key


def wants_sse(request: flask.Request) -> bool:
    """The client asked for Server-Sent Events (``Accept: text/event-stream``); NDJSON otherwise."""
    return request.accept_mimetypes.best_match(["application/x-ndjson", "text/event-stream"],
                                               default="application/x-ndjson") == "text/event-stream"


def sse_response(events: Iterator[dict[str, Any]]) -> flask.Response:
    """The same events as Server-Sent Events: ``event`` = the event's type, ``id`` = its seq (a
    client that reconnects can resume from ``Last-Event-ID`` through the events route)."""
    def frames() -> Iterator[bytes]:
        for ev in events:
            data = json.dumps(ev, ensure_ascii=False, separators=(",", ":"))
            yield f"event: {ev.get('type', 'message')}\nid: {ev.get('seq', '')}\ndata: {data}\n\n".encode()

    resp = flask.Response(frames(), mimetype="text/event-stream")
    resp.headers["Cache-Control"] = "no-store"
    resp.headers["X-Accel-Buffering"] = "no"
    return resp


def ndjson_response(lines: Iterator[bytes]) -> flask.Response:
    resp = flask.Response(lines, mimetype="application/x-ndjson")
    resp.headers["Cache-Control"] = "no-store"
    resp.headers["X-Accel-Buffering"] = "no"
    return resp
