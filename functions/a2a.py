"""``/a2a`` (the A2A server: JSON-RPC at ``POST /a2a``, HTTP+JSON under ``/a2a/...``) and
``GET /.well-known/agent-card.json`` (docs/a2a.md). The caller is authenticated here like on every
route; the a2a-sdk's routes then parse, dispatch and render (``shared/a2a/app.py``)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

import flask

from functions.common import caller
from shared.errors import PayloadTooLarge
from shared.web import json_response

_HOP_BY_HOP = {"transfer-encoding", "connection", "keep-alive", "content-length"}


def a2a(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    rt, uid = caller(request)
    from shared.a2a.app import a2a_app
    from shared.a2a.asgi_bridge import call_asgi

    limit = rt.settings.max_body_bytes
    body = request.stream.read(limit + 1)
    if len(body) > limit:
        raise PayloadTooLarge(f"the request body is larger than {limit} bytes", code="PAYLOAD_TOO_LARGE")
    host, _, port = request.host.partition(":")
    path_only = request.path.rstrip("/") or "/"  # the route table ignores one trailing slash; so does /a2a
    if path_only == "/a2a" and request.mimetype not in ("application/json", "application/a2a+json"):
        return _content_type_not_supported(request.mimetype)
    if path_only == "/a2a" and (unreadable := _unreadable_number(body)) is not None:
        return json_response({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": unreadable}})
    answer = call_asgi(a2a_app(), method=request.method, path=path_only, query=request.query_string,
                       headers={k: v for k, v in request.headers.items()}, body=body, state={"uid": uid},
                       server=(host, int(port or (443 if request.scheme == "https" else 80))),
                       scheme=request.scheme)

    def relay() -> Iterator[bytes]:
        try:
            yield from answer.body
        finally:
            answer.close()

    headers = [(k, _media_type(v) if k.lower() == "content-type" else v) for k, v in answer.headers
               if k.lower() not in _HOP_BY_HOP]
    if path_only != "/a2a" and answer.status in (400, 500):  # an HTTP+JSON error: small, read whole
        try:
            status, body = _rest_error(answer.status, b"".join(answer.body))
        finally:
            answer.close()
        return flask.Response(body, status=status, headers=headers)
    return flask.Response(relay(), status=answer.status, headers=headers)


_LONG_DIGITS = re.compile(rb"[0-9]{4301}")
"""More digits in a row than Python converts to an integer (``sys.get_int_max_str_digits``)."""


def _unreadable_number(body: bytes) -> str | None:
    """Why a JSON-RPC body is not JSON Python can read, when it holds an integer of more than 4,300
    digits (the a2a-sdk's parser raised a plain ``ValueError``, answered -32603 Internal error with
    Python's message): a JSON-RPC Parse error. Only such a body is parsed here (digits inside a
    string are text, and pass)."""
    if not _LONG_DIGITS.search(body):
        return None
    import json

    try:
        json.loads(body)
    except json.JSONDecodeError:
        return None  # the SDK answers its own Parse error
    except ValueError:
        return "Parse error: the body holds an integer of more than 4,300 digits"
    return None


_SPEC_STATUS = {"CONTENT_TYPE_NOT_SUPPORTED": 415, "TASK_NOT_CANCELABLE": 409, "INVALID_AGENT_RESPONSE": 502}
"""HTTP statuses of A2A errors where the spec (1.0, section 5.4) and the a2a-sdk 1.3.0 differ (it
answers 400 / 500): the spec's, by the error's ``reason``."""


def _rest_error(status: int, body: bytes) -> tuple[int, bytes]:
    import json

    try:
        error = json.loads(body)["error"]
        reasons = [d.get("reason") for d in error.get("details") or [] if isinstance(d, dict)]
    except (ValueError, KeyError, TypeError, AttributeError):
        return status, body
    spec = next((_SPEC_STATUS[r] for r in reasons if r in _SPEC_STATUS), None)
    if spec is None:
        return status, body
    error["code"] = spec
    return spec, json.dumps({"error": error}).encode()


def _content_type_not_supported(mimetype: str) -> flask.Response:
    from shared.a2a.app import content_type_error

    return json_response(content_type_error(mimetype))


def _media_type(value: str) -> str:
    """The A2A spec (1.0, section 11.1) has the HTTP+JSON binding answer ``application/json``; the
    a2a-sdk 1.3.0 labels its REST answers ``application/a2a+json``: relabelled here."""
    return value.replace("application/a2a+json", "application/json")


def agent_card(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    from shared.a2a.card import card_json
    from shared.runtime import get_runtime

    rt = get_runtime()
    response = json_response(card_json(rt, rt.settings.a2a_public_url or request.host_url))
    response.headers["Cache-Control"] = "public, max-age=300"
    return response
