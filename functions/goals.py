"""``goals``: POST /agent/run -> one step of the goal-planning workflow (seed 000 section 5).

Called by the backend only (IAM-protected in production). It writes nothing but the usage
ledger's entries of its model calls (and, with money caps on, the reservations of a user's calls:
docs/budgets.md); ``google.genai`` is imported only when the model is first created.
"""

from __future__ import annotations

from collections.abc import Mapping

import flask

from shared.config import Settings
from shared.goals.contracts import GoalsRequest
from shared.goals.service import capped, goals_model, metered, run_goals
from shared.runtime import get_runtime
from shared.web import json_response, parse_model, read_json_body


def goals(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    settings = Settings.from_env()
    body = parse_model(GoalsRequest, read_json_body(request, settings.max_body_bytes))
    runtime = get_runtime()
    model = metered(goals_model(settings), body, settings, runtime.usage.record)
    model = capped(model, body, settings, lambda: runtime.services.budgets)
    response = run_goals(body, model, settings)
    return json_response(response.to_json())
