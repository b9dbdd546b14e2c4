"""The JSON error envelope for what the web framework answers by itself.

A path no route matches, a method no route accepts, a request Werkzeug cannot parse, an exception
no handler caught: Flask and functions-framework would answer an HTML page (or the exception's
text). :func:`install_json_errors` makes each of them ``{"ok": false, "error": {"code", "message"}}``
with the same status, in the dev server and in every deployed function (main.py). Kept free of
pydantic and the domain: main.py imports it at cold start.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import flask
from werkzeug.exceptions import HTTPException

log = logging.getLogger("agent_runtime.web")

__all__ = ["INTERNAL_ERROR", "http_exception_response", "install_json_errors", "internal_error_response",
           "json_response", "shown_path"]


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> flask.Response:
    resp = flask.Response(
        json.dumps(body, ensure_ascii=False, separators=(",", ":")),
        status=status,
        mimetype="application/json",
    )
    for key, value in (headers or {}).items():
        resp.headers[key] = value
    return resp


INTERNAL_ERROR = {"ok": False, "error": {"code": "INTERNAL", "message": "internal error"}}
_HTTP_CODES = {400: "BAD_REQUEST", 404: "ROUTE_NOT_FOUND", 405: "METHOD_NOT_ALLOWED", 408: "REQUEST_TIMEOUT",
               413: "PAYLOAD_TOO_LARGE", 414: "URI_TOO_LONG", 415: "UNSUPPORTED_MEDIA_TYPE",
               431: "HEADERS_TOO_LARGE", 501: "NOT_IMPLEMENTED"}
_KEPT_HEADERS = ("Allow", "Retry-After", "WWW-Authenticate")
MAX_PATH_IN_MESSAGE = 200


def shown_path(path: str) -> str:
    """The request path as an error message shows it: escaped (newlines and control characters
    visible, never a second log or header line) and bounded."""
    shown = path if len(path) <= MAX_PATH_IN_MESSAGE else path[:MAX_PATH_IN_MESSAGE] + "..."
    return shown.encode("unicode_escape").decode("ascii")


def http_exception_response(exc: HTTPException) -> flask.Response:
    """The JSON envelope for an error Werkzeug/Flask raised before (or instead of) our handler:
    no route matched (404 ``ROUTE_NOT_FOUND``), the method is not routed (405 with ``Allow``), a
    malformed request (400)... Redirects and other non-errors are not errors: handled by Flask."""
    status = exc.code or 500
    if status >= 500:
        log.error("web framework error %s serving %s %s: %s", status, flask.request.method,
                  shown_path(flask.request.path), exc.description)
        return json_response(INTERNAL_ERROR, 500)
    code = _HTTP_CODES.get(status, f"HTTP_{status}")
    if status == 404:
        message = f"no route for {flask.request.method} {shown_path(flask.request.path)}"
    elif status == 405:
        message = f"method {flask.request.method} is not allowed for {shown_path(flask.request.path)}"
    else:
        message = exc.description or exc.name
    headers = {k: v for k, v in exc.get_headers() if k in _KEPT_HEADERS}
    return json_response({"ok": False, "error": {"code": code, "message": message}}, status, headers)


def internal_error_response(exc: BaseException) -> flask.Response:
    """An exception no handler caught: logged with its traceback, answered without internals."""
    original = getattr(exc, "original_exception", None)  # Flask wraps it in InternalServerError
    if not isinstance(original, BaseException):
        if isinstance(exc, HTTPException):
            return http_exception_response(exc)
        original = exc
    log.error("unhandled error serving %s %s", flask.request.method, shown_path(flask.request.path),
              exc_info=original)
    return json_response(INTERNAL_ERROR, 500)


ErrorHandlerRegistrar = Callable[[Any], Callable[[Callable[..., Any]], Any]]
"""``flask.Flask.errorhandler``, or ``functions_framework.errorhandler`` (the app being created)."""


def install_json_errors(errorhandler: ErrorHandlerRegistrar) -> None:
    """Answer every error the framework renders itself with the JSON envelope, never an HTML page.

    ``errorhandler`` is a Flask app's ``errorhandler``; a deployed function passes
    ``functions_framework.errorhandler`` at import of main.py (functions-framework points it at the
    app it is creating before it imports the source). The 500 handler replaces functions-framework's
    ``crash_handler``, which answers the exception's text as HTML."""
    errorhandler(HTTPException)(http_exception_response)
    errorhandler(500)(internal_error_response)
    errorhandler(Exception)(internal_error_response)


