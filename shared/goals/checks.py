"""Deterministic checks of a plan against the user's context (``context`` of the request).

- ``calendar_conflicts``: scheduled tasks that overlap a listed calendar event. The planner treats
  any as an invalid answer (one repair attempt), so a plan never schedules on top of an event.
- ``duplicate_goal``: an existing goal the new goal repeats, so the reply can say so.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from shared.goals.contracts import CalendarEvent, ExistingGoal, Milestone, as_utc

_STOPWORDS = frozenset(re.findall(r"\w+", "a an the my to for of and in on with how get be become do"))


def calendar_conflicts(milestones: Iterable[Milestone], events: list[CalendarEvent]) -> list[str]:
    """One line per scheduled task of ``milestones`` that overlaps an event (touching ends is fine)."""
    problems: list[str] = []
    for milestone in milestones:
        for task in milestone.tasks:
            if task.start is None or task.end is None:
                continue
            start, end = as_utc(task.start), as_utc(task.end)
            for event in events:
                if start < as_utc(event.end) and as_utc(event.start) < end:
                    problems.append(
                        f"task {task.title!r} of milestone {milestone.title!r} ({task.start.isoformat()} to "
                        f"{task.end.isoformat()}) overlaps the calendar event {event.title!r} "
                        f"({event.start.isoformat()} to {event.end.isoformat()})")
    return problems


def duplicate_goal(title: str, existing: list[ExistingGoal], flagged_id: str | None = None) -> ExistingGoal | None:
    """The existing goal that ``title`` repeats: the one the model flagged (if it exists), else one
    whose title has mostly the same words."""
    if flagged_id:
        for goal in existing:
            if goal.id == flagged_id:
                return goal
    words = _words(title)
    if not words:
        return None
    for goal in existing:
        other = _words(goal.title)
        if other and len(words & other) / len(words | other) >= 0.5:
            return goal
    return None


def _words(title: str) -> set[str]:
    return {w for w in re.findall(r"\w+", title.casefold()) if w not in _STOPWORDS}
