"""Query parameters, read exactly as the OpenAPI document states them (400 ``INVALID_QUERY``
naming the parameter otherwise): the one query parser of every route.

Each route declares its parameters in the route table (``Route.query``, ``shared/routes.py``); the
dispatch (``shared/web.py``) parses a request's query string with :func:`parse` before the handler
runs, so a parameter the route does not take (``?limt=5``), one given twice or a bad value is a 400
on every route, and ``after``, ``limit`` and ``follow`` mean the same everywhere. Handlers read the
parsed values with :func:`params`.

``int()`` alone would also take ``" 5"``, ``"5_0"`` or non-ASCII digits (``"\\u0665"``, and ``"\\u00b2"``, which
``str.isdigit`` accepts but ``int`` refuses: a 500); a boolean that is neither true nor false used
to be a silent false; a parameter given twice is refused rather than guessed at.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Protocol

import flask

from shared import routes
from shared.errors import InvalidInput
from shared.wire import MAX_INT64


class Args(Protocol):
    """What a request's query string offers (``werkzeug``'s ``MultiDict``)."""

    def getlist(self, key: str) -> list[str]: ...

    def __iter__(self) -> Iterator[str]: ...


def _invalid(name: str, message: str) -> InvalidInput:
    return InvalidInput(f"query parameter {name} {message}", code="INVALID_QUERY", details={"field": name})


def one_arg(args: Args, name: str) -> str | None:
    """The parameter's value (``None`` when absent); given twice it is a 400."""
    values = args.getlist(name)
    if len(values) > 1:
        raise _invalid(name, f"is given {len(values)} times")
    return values[0] if values else None


def int_arg(args: Args, name: str, *, default: int, minimum: int = 0, maximum: int = MAX_INT64) -> int:
    """An integer in ASCII digits within ``minimum..maximum`` (absent: ``default``)."""
    raw = one_arg(args, name)
    if raw is None:
        return default
    digits = raw[1:] if raw.startswith("-") else raw
    if not (digits.isascii() and digits.isdigit()):
        raise _invalid(name, f"must be an integer from {minimum} to {maximum}")
    if len(digits.lstrip("0")) > len(str(MAX_INT64)):  # past every bound (and past int()'s 4,300 digits)
        raise _invalid(name, f"must be {'>= ' + str(minimum) if raw.startswith('-') else '<= ' + str(maximum)}")
    value = int(raw)
    if value < minimum:
        raise _invalid(name, f"must be >= {minimum}")
    if value > maximum:
        raise _invalid(name, f"must be <= {maximum}")
    return value


def bool_arg(args: Args, name: str) -> bool:
    """``true``/``1`` or ``false``/``0``, any case (absent: false)."""
    raw = one_arg(args, name)
    if raw is None:
        return False
    value = raw.lower()
    if value not in ("true", "1", "false", "0"):
        raise _invalid(name, "must be true or false")
    return value in ("true", "1")


def single_values(args: Args) -> dict[str, str]:
    """Every parameter given, each at most once (a repeated one is a 400)."""
    return {name: value for name in args if (value := one_arg(args, name)) is not None}


def enum_arg(args: Args, name: str, values: Sequence[str], *, default: str | None) -> str | None:
    """One of ``values`` (absent: ``default``); given but empty is not absent (a 400)."""
    raw = one_arg(args, name)
    if raw is None:
        return default
    if raw not in values:
        raise _invalid(name, f"must be one of {', '.join(values)}")
    return raw


def parse(declared: Sequence[routes.Param], args: Args) -> dict[str, Any]:
    """The values of a route's query parameters (absent ones: their default, or left out when the
    default is ``None``). Any parameter not ``declared`` is a 400 ``INVALID_QUERY`` naming it and
    what the route takes."""
    known = {p.name: p for p in declared}
    for name in args:
        if name not in known:
            takes = f"it takes {', '.join(known)}" if known else "it takes none"
            raise InvalidInput(f"unknown query parameter {name}; {takes}", code="INVALID_QUERY",
                               details={"field": name, "allowed": list(known)})
    values: dict[str, Any] = {}
    for p in declared:
        value: Any
        if one_arg(args, p.name) is None:
            value = p.default
        elif p.kind == "integer":
            value = int_arg(args, p.name, default=0, minimum=p.minimum, maximum=min(p.maximum, MAX_INT64))
        elif p.kind == "boolean":
            value = bool_arg(args, p.name)
        elif p.kind == "enum":
            value = enum_arg(args, p.name, p.values, default=None)
        else:
            value = one_arg(args, p.name)
        if value is not None:
            values[p.name] = value
    return values


_PARSED = "agent_runtime.query"


def parse_request(route: routes.Route, request: flask.Request) -> None:
    """Parse ``request``'s query string by ``route`` (a 400 when it is wrong) and keep the values
    for :func:`params`. The dispatch calls it before the handler."""
    request.environ[_PARSED] = parse(route.query, request.args)


def params(request: flask.Request) -> dict[str, Any]:
    """The parsed query parameters of ``request`` (:func:`parse_request`); parsed here by the route
    the request matches if the dispatch did not (a handler called directly)."""
    parsed = request.environ.get(_PARSED)
    if parsed is None:
        found = routes.match(request.method, request.path, routes.ROUTES).route
        parsed = parse(found.query if found else (), request.args)
        request.environ[_PARSED] = parsed
    return dict(parsed)


def resume_after(request: flask.Request) -> int:
    """Where a read of an event log starts: after the ``seq`` in the ``Last-Event-ID`` header (what an
    ``EventSource`` sends when it reconnects, so it wins), else in ``lastEventId`` (for clients that
    cannot set headers; a reconnect's position, so it wins over ``after``, the first read's, which a
    reconnecting client's URL may still carry), else ``after`` (default 0)."""
    header = (request.headers.get("Last-Event-ID") or "").strip()
    if header:
        if not (header.isascii() and header.isdigit()):
            raise InvalidInput("header Last-Event-ID must be the seq of an event (an integer >= 0)",
                               code="INVALID_LAST_EVENT_ID", details={"field": "Last-Event-ID"})
        # past every seq (also past int()'s 4,300 digits): nothing is left to read
        return MAX_INT64 if len(header.lstrip("0")) > len(str(MAX_INT64)) else min(int(header), MAX_INT64)
    query = params(request)
    if "lastEventId" in query:
        return int(query["lastEventId"])
    return int(query.get("after", 0))
