"""``usage``: GET /api/agent/usage?from=&to=&groupBy=operationType|contextType|model|day.

The caller's own model calls from the usage ledger, summed per group (only the caller's ledger
collection is read). ``from``/``to``: RFC 3339 timestamps or dates (UTC); default the last 30 days;
at most 93 days apart.
"""

from __future__ import annotations

from collections.abc import Mapping

import flask

from functions.common import caller
from shared.query import params
from shared.usage.params import parse_usage_params
from shared.usage.views import budget_status, summarise
from shared.web import json_response


def usage(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    rt, uid = caller(request)
    asked = parse_usage_params(params(request))
    entries = rt.usage.between(uid, asked.start, asked.end)
    body = summarise(entries, asked.group_by, asked.start, asked.end)
    body.budget = budget_status(rt.services.budgets, uid, rt.settings)
    return json_response(body.to_json())
