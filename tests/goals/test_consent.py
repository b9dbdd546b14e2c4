"""Consent detection on a table of phrasings: approval finalises, anything else refines."""

from __future__ import annotations

import pytest

from shared.goals.consent import detect_consent

APPROVALS = [
    "Looks good!",
    "looks good",
    "LOOKS GOOD",
    "Looks Good To Me",
    "yes!",
    "Yes",
    "yes please",
    "Yeah, sounds great",
    "yep",
    "ok",
    "Okay.",
    "okay\u2026",
    "sure, why not",
    "save it",
    "Save it please",
    "please go ahead and save it",
    "Go ahead",
    "go for it!",
    "I approve",
    "Approved \u2705",
    "\U0001f44d",
    "\U0001f44d\U0001f44d",
    "Perfect, thanks!",
    "Perfect \U0001f4af",
    "Love it! Lock it in.",
    "lgtm",
    "Great plan, let\u2019s do this!",
    "Sounds good to me \U0001f680",
    "That works for me",
    "This is exactly what I needed",
    "No changes needed, save it.",
    "Don't change a thing, it's perfect",
    "Can you save it?",
    "Could you finalize this?",
    "I'd like to save it",
    "Let's finalise it",
    "All good, create the goal",
    "Looks good, I'm excited to start!",
    "\uff39\uff25\uff33",  # full-width YES
    "yes!!! \U0001f389",
    # "now" on its own is not a hedge; "done" is filler that does not block an explicit approval.
    "Looks good now, save it",
    "Perfect now, thanks!",
    "I'm done, looks good",
    "Done, save it",
]

NOT_APPROVALS = [
    "go ahead but move the design phase",
    "Go ahead, but move the design phase to next week",
    "not yet",
    "Not yet, let me think",
    "yes, add a milestone first",
    "Yes but make the tasks shorter",
    "Looks good, but can we make it 3 months?",
    "no",
    "Nope",
    "nah",
    "No, that's not right",
    "I don't like it",
    "I don't approve",
    "doesn't look good",
    "Don't save it yet",
    "Wait",
    "hold on",
    "hmm, okay I guess",
    "maybe",
    "looks good so far",
    "\U0001f44e",
    "\U0001f914",
    "Does this look good?",
    "ok?",
    "Can you move the design phase to next week?",
    "Can you add a milestone for mobile design?",
    "I want to learn Kotlin.",
    "Now I want to start learning Flutter.",
    "Okay, what about adding a testing milestone?",
    "Looks good. Add a deadline though.",
    "Sounds good, although I'd prefer weekends",
    "yes the design phase is too long",
    "Save it after you add a testing phase",
    "Save it, I'll review it later",
    "ok but",
    "Thanks!",
    "",
    "   ",
    "Make it shorter",
    "yesterday was busy",
    "Okay, make the launch earlier",
    "LOOKS GOOD BUT CHANGE THE TITLE",
    # Hedges: fine as it stands is not "save it as my goal".
    "looks good for now",
    "Looks good... for now",
    "LOOKS GOOD FOR NOW",
    "looks good at the moment",
    "Fine for the moment",
    "ok for the time being",
    "Looks good \U0001f44d for now",
    "Save it for now",
    "nothing else for now",
    "mostly looks good",
    "Looks great at this point",
    # "Done" is ambiguous (done editing, done for today, done with the app): not consent on its own.
    "I'm done",
    "done!",
    "I'm done for now",
    # Approval followed by something that is not an approval.
    "Sounds good, let me sleep on it",
    "yes if that's ok",
    "Ok I'll think about it",
]


@pytest.mark.parametrize("message", APPROVALS)
def test_approval_is_consent(message: str) -> None:
    result = detect_consent(message)
    assert result.consent, result.reason


@pytest.mark.parametrize("message", NOT_APPROVALS)
def test_anything_else_is_not_consent(message: str) -> None:
    result = detect_consent(message)
    assert not result.consent, result.reason


def test_the_table_is_large_enough() -> None:
    assert len(APPROVALS) + len(NOT_APPROVALS) >= 40
    assert len(set(APPROVALS) | set(NOT_APPROVALS)) == len(APPROVALS) + len(NOT_APPROVALS)


def test_the_decision_names_its_clauses() -> None:
    result = detect_consent("Go ahead, but move the design phase")
    assert [c.kind for c in result.clauses] == ["positive", "negative", "request"]
    assert "move the design phase" in result.reason
    # The code (what INFO logs carry) names the kinds only, never the user's words.
    assert result.code == "positive,negative,request"
    assert detect_consent("").code == "empty"
