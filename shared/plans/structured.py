"""One structured-output model call, with exactly one repair attempt.

The model answers JSON matching ``schema``; an answer that is not JSON, does not validate or that
``accept`` refuses (``ValueError`` naming the problems) is shown back to the model once with the
problems; a second bad answer is a failure (``problems`` say why). ``ModelError`` propagates.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from shared.formats import clean_json_schema, validation_problems
from shared.models.base import Model, ModelRequest, Part, Turn

log = logging.getLogger("agent_runtime.plans")

T = TypeVar("T")
MAX_ATTEMPTS = 2


class Refused(ValueError):
    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass
class Answer(Generic[T]):
    value: T | None
    problems: list[str] = field(default_factory=list)
    attempts: int = 0


@functools.cache
def response_schema_of(schema: type[BaseModel]) -> dict[str, Any]:
    """``schema``'s JSON schema as the model is given it (built once per class: it is costly)."""
    return clean_json_schema(schema.model_json_schema(), inline_refs=True, drop=frozenset({"title", "default"}))


def parse_json(text: str) -> object:
    body = text.strip()
    if body.startswith("```"):
        body = body.strip("`").removeprefix("json").strip()
    return json.loads(body)


def ask(model: Model, instruction: str, prompt: str, schema: type[BaseModel], accept: Callable[[BaseModel], T], *,
        timeout_s: float | None = None) -> Answer[T]:
    turns = [Turn(role="user", parts=[Part(text=prompt)])]
    response_schema = response_schema_of(schema)
    problems: list[str] = []
    for attempt in range(1, MAX_ATTEMPTS + 1):
        request = ModelRequest(system_instruction=instruction, turns=turns, response_schema=response_schema,
                               timeout_s=timeout_s)
        text = model.generate(request).turn.text
        try:
            value = accept(schema.model_validate(parse_json(text)))
        except ValidationError as exc:
            problems = [f"{f}: {m}" for f, m in validation_problems(exc)]
        except Refused as exc:
            problems = exc.problems
        except ValueError as exc:  # not JSON
            problems = [f"the answer is not valid JSON ({exc})"]
        else:
            return Answer(value=value, attempts=attempt)
        log.warning("invalid structured answer (attempt %d of %d): %d problem(s)", attempt, MAX_ATTEMPTS,
                    len(problems))
        turns = [*turns, Turn(role="model", parts=[Part(text=text or "(empty)")]),
                 Turn(role="user", parts=[Part(text="Your answer was rejected:\n" + "\n".join(
                     f"- {p}" for p in problems[:20]) + "\nAnswer again with the complete corrected JSON "
                     "object only, matching the response schema.")])]
    return Answer(value=None, problems=problems, attempts=MAX_ATTEMPTS)
