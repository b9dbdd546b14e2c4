"""The answer corpus of issue 32 (``data/answer_corpus.json``) and how a reading is scored against it.

The corpus was written for issue 32 from docs/host-protocol.md and the booking goal alone, by
someone who had not read the extraction code (``hostagent/understanding.py``), and is kept exactly
as written: its expectations are never edited to fit the code. Each case is one message of a person
in a context (the goal, the agent's last question, the person's earlier messages) with the expected
reading of everything said so far.

Scoring: a case is right when every field of its ``expected`` matches, and the fields it leaves out
hold their neutral value where the case's context fixes one: ``name``/``email`` null (the default
goal gives no contact details), ``cancel`` false, ``usable`` true. ``seats`` and ``showtime`` are
compared only where ``expected`` gives them (the default goal already says two seats, evening).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hostagent.understanding import Turn, Understanding, understand

PATH = Path(__file__).parent / "data" / "answer_corpus.json"
CORPUS: dict[str, Any] = json.loads(PATH.read_text())
CASES: list[dict[str, Any]] = CORPUS["cases"]
DEFAULT_GOAL: str = CORPUS["goal_default"]
CONTACT_QUESTION: str = CORPUS["question_contact"]
# The cases whose messages give everything a booking needs: the agent must complete it on both hosts.
USABLE_CONTACT = [c for c in CASES if c["category"] in ("contact", "split", "in_goal", "correction")]


@dataclass(frozen=True)
class Scored:
    case: str
    got: dict[str, Any]
    expected: dict[str, Any]

    @property
    def right(self) -> bool:
        return all(self.got.get(k) == v for k, v in self.expected.items())


def goal_of(case: dict[str, Any]) -> str:
    return str(case.get("goal") or DEFAULT_GOAL)


def question_of(case: dict[str, Any]) -> str | None:
    """The agent's last question: the case's own (null: none), else the contact question."""
    question: str | None = case.get("question", CONTACT_QUESTION)
    return question


def turns_of(case: dict[str, Any]) -> list[Turn]:
    """The person's messages of the case: earlier ones answer the contact question (the session asked
    it), the last one answers the case's question."""
    turns = [Turn(text, CONTACT_QUESTION) for text in case.get("earlier", [])]
    if case["message"] is not None:
        turns.append(Turn(case["message"], question_of(case)))
    return turns


def reading_of(case: dict[str, Any]) -> tuple[Understanding, bool]:
    """What the agent understands after the case's messages, and whether its last message was usable."""
    turns = turns_of(case)
    understood = understand(goal_of(case), turns)
    return understood, understood.last.usable if understood.last is not None else True


def score(case: dict[str, Any]) -> Scored:
    understood, usable = reading_of(case)
    got: dict[str, Any] = {"name": understood.name, "email": understood.email, "seats": understood.count,
                           "showtime": understood.showtime, "cancel": understood.cancel, "usable": usable}
    expected: dict[str, Any] = {"name": None, "email": None, "cancel": False, "usable": True}
    expected.update(case["expected"])
    return Scored(case["id"], got, expected)
