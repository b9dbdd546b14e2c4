"""The response contract of seed 000 section 5, written out independently of the pydantic models,
so every test can check a response against the spec rather than against the code under test."""

from __future__ import annotations

from typing import Any

import jsonschema

_DATE = {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"}
_DATETIME = {"type": "string", "format": "date-time", "pattern": r"^\d{4}-\d{2}-\d{2}T"}
_TITLE = {"type": "string", "minLength": 1}

TASK = {"type": "object", "required": ["title"],
        "properties": {"id": {"type": "string"}, "title": _TITLE, "description": {"type": "string"},
                       "dueDate": _DATE, "start": _DATETIME, "end": _DATETIME}}
MILESTONE = {"type": "object", "required": ["title", "tasks"],
             "properties": {"id": {"type": "string"}, "title": _TITLE, "description": {"type": "string"},
                            "dueDate": _DATE, "tasks": {"type": "array", "items": TASK}}}
GOAL = {"type": "object", "required": ["title"],
        "properties": {"id": {"type": "string"}, "title": _TITLE, "description": {"type": "string"},
                       "targetDate": _DATE}}
GOAL_PREVIEW = {"type": "object", "required": ["goal", "milestones"],
                "properties": {"id": {"type": "string"}, "goal": GOAL,
                               "milestones": {"type": "array", "items": MILESTONE}}}

RESPONSE: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["reply", "action", "state"],
    "properties": {
        "reply": {"type": "string", "minLength": 1},
        "action": {
            "type": "object", "additionalProperties": False, "required": ["type", "payload"],
            "properties": {"type": {}, "payload": {}},
            "oneOf": [
                {"properties": {"type": {"const": "save_preview"}, "payload": {
                    "type": "object", "additionalProperties": False, "required": ["goalPreview", "iteration"],
                    "properties": {"goalPreview": GOAL_PREVIEW, "iteration": {"type": "integer", "minimum": 1}}}}},
                {"properties": {"type": {"const": "finalize_goal"}, "payload": {
                    "type": "object", "additionalProperties": False,
                    "required": ["goalPreviewId", "goal", "milestones"],
                    "properties": {"goalPreviewId": {"type": "string", "minLength": 1}, "goal": GOAL,
                                   "milestones": {"type": "array", "items": MILESTONE}}}}},
                {"properties": {"type": {"const": "none"}, "payload": {"type": "object", "maxProperties": 0}}},
            ],
        },
        "state": {
            "type": "object", "additionalProperties": False, "required": ["step", "iteration", "sessionActive"],
            "properties": {"step": {"enum": ["plan_generated", "plan_iteration", "finalized"]},
                           "iteration": {"type": "integer", "minimum": 0},
                           "sessionActive": {"type": "boolean"}},
        },
    },
}


def assert_valid_response(body: Any) -> dict[str, Any]:
    """``body`` follows seed 000 section 5 (raises ``jsonschema.ValidationError`` otherwise)."""
    jsonschema.validate(body, RESPONSE, format_checker=jsonschema.FormatChecker())
    assert isinstance(body, dict)
    return body
