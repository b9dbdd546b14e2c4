"""Deterministic checks of a plan against the user's context (``context`` of the request).

- ``calendar_conflicts``: scheduled tasks that overlap a listed calendar event. The planner treats
  any as an invalid answer (one repair attempt), so a plan never schedules on top of an event.
- ``schedules_not_after_today``: scheduled tasks that do not start after today (the prompt's
  rule); also an invalid answer. A task's day is its start's date *as written*, in its own UTC
  offset (no offset: UTC), compared with ``today``, the date the model was given: the model reads
  and writes dates in those terms, and no time zone of the user is known. A slot the current plan
  already had (a task the edit carried over unchanged) is not checked again.
- ``duplicate_goal``: an existing goal the new goal repeats, so the reply can say so.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import date, datetime

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


def schedules_not_after_today(milestones: Iterable[Milestone], today: date,
                              known_slots: frozenset[tuple[datetime, datetime]] = frozenset()) -> list[str]:
    """One line per scheduled task of ``milestones`` whose start date (as written) is not after
    ``today``; slots in ``known_slots`` (UTC start and end) are accepted as they are."""
    problems: list[str] = []
    for milestone in milestones:
        for task in milestone.tasks:
            if task.start is None or task.end is None:
                continue
            if (as_utc(task.start), as_utc(task.end)) in known_slots:
                continue
            if task.start.date() <= today:
                problems.append(
                    f"task {task.title!r} of milestone {milestone.title!r} starts {task.start.isoformat()}, "
                    f"which is not after today ({today.isoformat()}); schedule it from "
                    f"{date.fromordinal(today.toordinal() + 1).isoformat()} on or leave start and end out")
    return problems


def scheduled_slots(milestones: Iterable[Milestone]) -> frozenset[tuple[datetime, datetime]]:
    """The (UTC start, UTC end) of every scheduled task of ``milestones``."""
    return frozenset((as_utc(t.start), as_utc(t.end)) for m in milestones for t in m.tasks
                     if t.start is not None and t.end is not None)


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
