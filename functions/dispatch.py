"""Requests to handlers, by the route table (``shared/routes.py``): one dispatch for every deployed
function and for the dev server.

A path no route of the function matches is a 404 ``ROUTE_NOT_FOUND`` whatever the method; a path
some route matches with another method is a 405 with ``Allow``; otherwise the route's handler is
imported (on its first request) and called with the path parameters. Errors it raises are mapped
to HTTP by :func:`shared.web.http_endpoint`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from typing import cast

import flask

from shared import routes
from shared.errors import MethodNotAllowed, NotFound
from shared.http_errors import shown_path
from shared.web import http_endpoint

RouteHandler = Callable[[flask.Request, Mapping[str, str]], flask.Response]
"""What a route's handler is: ``handler(request, path_params)``."""


def dispatch(request: flask.Request, table: Iterable[routes.Route]) -> flask.Response:
    found = routes.match(request.method, request.path, table)
    if found.route is None:
        if found.allowed:
            raise MethodNotAllowed(request.method, found.allowed)
        raise NotFound(f"no route for {request.method} {shown_path(request.path)}", code="ROUTE_NOT_FOUND")
    handler = cast(RouteHandler, routes.resolve(found.route.handler))
    return handler(request, found.params)


@functools.lru_cache(maxsize=64)
def function_entry(name: str) -> Callable[[flask.Request], flask.Response]:
    """The HTTP entry point of the deployed function ``name``: its routes in the table (read per
    request, so the table is the only place a route is added)."""

    @http_endpoint
    def entry(request: flask.Request) -> flask.Response:
        return dispatch(request, routes.routes_of(name))

    entry.__name__ = entry.__qualname__ = name
    return entry
