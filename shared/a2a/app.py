"""The A2A server application: the a2a-sdk's own JSON-RPC and HTTP+JSON routes (Starlette) over
:class:`~shared.a2a.handler.RuntimeRequestHandler`, one per process. The edge (``functions/a2a.py``)
authenticates the caller and runs a request through it (``shared/a2a/asgi_bridge.py``): the caller's
uid reaches the handler in the request's ``state``, never from anything the client sent."""

from __future__ import annotations

import functools
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.server.routes import create_jsonrpc_routes, create_rest_routes
from a2a.server.routes.common import DefaultServerCallContextBuilder
from starlette.applications import Starlette
from starlette.requests import Request

from shared.a2a.card import PATH, build_card
from shared.a2a.handler import RuntimeRequestHandler


class _CallerContext(DefaultServerCallContextBuilder):
    """The SDK's call context plus the uid the edge authenticated (``scope["state"]["uid"]``) and
    the request's query as sent (``query``: the SDK's parser drops values it cannot read)."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        context.state["uid"] = request.scope.get("state", {}).get("uid")
        context.state["query"] = list(request.query_params.multi_items())
        return context


@functools.cache
def a2a_app() -> Any:
    from shared.runtime import get_runtime

    card = functools.cache(lambda: build_card(get_runtime(), ""))
    handler = RuntimeRequestHandler(get_runtime, card)
    builder = _CallerContext()
    routes = [*create_jsonrpc_routes(handler, PATH, context_builder=builder),
              *create_rest_routes(handler, context_builder=builder, path_prefix=PATH)]
    return Starlette(routes=routes)


def content_type_error(mimetype: str) -> dict[str, Any]:
    """The JSON-RPC binding takes JSON only: anything else is A2A's ContentTypeNotSupportedError
    (-32005), as a JSON-RPC error response (its request id cannot be read)."""
    from a2a.server.request_handlers.response_helpers import build_error_response
    from a2a.utils.errors import ContentTypeNotSupportedError

    error = ContentTypeNotSupportedError(
        message=f"the JSON-RPC binding takes application/json, not {mimetype or 'no type'}")
    return build_error_response(None, error)
