"""Issue 32: the agent understands what people say, not the phrasings of our own two hosts.

The corpus (``data/answer_corpus.json``, see ``corpus.py``) was written from the protocol document
and the goal alone by someone who had not read ``hostagent/understanding.py``. Here: the extraction's
accuracy over it; the agent booking, on both simulated hosts, for every corpus case whose messages
give the contact details, with the hosts' simulated person answering in the corpus's words; goal
changes from the corpus mid-session; the question policy (clarify, never the same question twice,
``blocked`` after three answers that did not help, ``no_answer`` when nobody answers); the contact
profile (``AgentConfig.contact``).
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

import pytest

from hostagent.understanding import MAX_READ_CHARS, MAX_UNHELPFUL_ANSWERS, Contact, Turn, read, understand
from tests.hostagent.corpus import CASES, CONTACT_QUESTION, DEFAULT_GOAL, PATH, USABLE_CONTACT, score
from tests.hostagent.support import HOSTS, Session, run

ACCURACY = 0.95
# Neither simulated cinema shows Inception: the sessions book Dune instead (only the title changes).
FILM = "Dune"


def _here(goal: str) -> str:
    return goal.replace("Inception", FILM)


def test_the_corpus_is_kept_as_written() -> None:
    corpus = json.loads(PATH.read_text())
    assert "has not read the extraction code" in corpus["about"]
    assert len(CASES) >= 40 and len({c["id"] for c in CASES}) == len(CASES)
    categories = {c["category"] for c in CASES}
    assert {"contact", "split", "in_goal", "correction", "goal_change", "unusable"} <= categories


def test_the_extraction_reads_at_least_95_percent_of_the_corpus_right() -> None:
    scored = [score(case) for case in CASES]
    misses = {s.case: {k: (s.got.get(k), v) for k, v in s.expected.items() if s.got.get(k) != v}
              for s in scored if not s.right}
    accuracy = 1 - len(misses) / len(scored)
    print(f"corpus accuracy {accuracy:.1%} ({len(scored) - len(misses)}/{len(scored)}); misses: {misses}")
    assert accuracy >= ACCURACY, misses


def test_a_reading_holds_what_one_message_says() -> None:
    got = read("It's for Jonas Weber <jonas@weber.example.de>", asked="contact")
    assert (got.name, got.email, got.usable) == ("Jonas Weber", "jonas@weber.example.de", True)
    # A movie in the goal is not a name, nor are the words of a known title.
    goal = read("Book 2 seats for Dune tonight, email ada@example.com")
    assert goal.name is None and goal.email == "ada@example.com" and goal.seats == 2
    assert read("Inside Out 2, ada@example.com", asked="contact", titles=["Inside Out 2"]).name is None
    # The address called wrong is not the one taken; a spelled-out address is a guess to ask about.
    assert read("jack.doe@example.com, not jack@example.com").email == "jack.doe@example.com"
    spelled = read("my email is john at example dot com", asked="contact")
    assert spelled.email is None and spelled.guess == "john@example.com" and not spelled.usable
    # Without a question about names, a capitalised word is not a name.
    assert read("Stop, forget the booking.").name is None and read("Stop, forget the booking.").cancel
    assert read("Zoe Miller", asked="name").name == "Zoe Miller" and read("Zoe Miller").name is None
    assert read("cancel the coupon").cancel is False
    assert read("Actually the later show please").showtime == "later"
    assert (read("around 8.30pm").showtime, read("around 8.30pm").approximate) == ("20:30", True)
    # Only the start of a message is read (an answer is short): what a wall of text hides is not taken.
    assert read("x" * MAX_READ_CHARS + " ada@example.com").email is None
    assert read("Ada Lovelace <ada@example.com> " + "x" * MAX_READ_CHARS, asked="contact").name == "Ada Lovelace"


# More phrasings, written by the extraction's author after the corpus (so not an independent
# measure, unlike the corpus): what it also reads, kept from regressing. (text, asked, expected).
MORE: list[tuple[str, str | None, dict[str, Any]]] = [
    ("sure thing! ada lovelace, ada@example.com", "contact", {"name": "Ada Lovelace", "email": "ada@example.com"}),
    ("My name? Alan Turing.", "contact", {"name": "Alan Turing", "email": None}),
    ("Alan Turing, but I do not want to give my email", "contact", {"name": "Alan Turing", "usable": True}),
    ("my name is dana smith", "contact", {"name": "Dana Smith"}),
    ("Book it for my wife, Jane Doe, jane@doe.com", "contact", {"name": "Jane Doe", "email": "jane@doe.com"}),
    ("Je m'appelle Marie Curie, marie@curie.fr", "contact", {"name": "Marie Curie", "email": "marie@curie.fr"}),
    ("Mr. Alan Turing, alan@example.com", "contact", {"name": "Alan Turing"}),
    ("I\u2019m Sam O\u2019Neill", "contact", {"name": "Sam O'Neill"}),
    ("Dr. Jane van der Berg <jane@x.nl>", "contact", {"name": "Jane van der Berg", "email": "jane@x.nl"}),
    ("Great, thanks", "contact", {"name": None, "usable": False}),
    ("Maybe later.", "contact", {"name": None, "usable": False}),
    ("Sorry, make it Oppenheimer", "contact", {"name": None}),
    ("three of us", None, {"seats": 3}),
    ("we are 4", None, {"seats": 4}),
    ("just me", None, {"seats": 1}),
    ("Stop!", None, {"cancel": True}),
    ("scrap that", None, {"cancel": True}),
    ("please don't book", None, {"cancel": True}),
    ("cancel that, make it 3 seats", None, {"cancel": False, "seats": 3}),
    ("something around 8.30pm", None, {"showtime": "20:30", "approximate": True}),
    ("the earlier one", None, {"showtime": "earlier"}),
    ("I'll tell you later", None, {"showtime": None}),
]


@pytest.mark.parametrize(("message", "asked", "expected"), MORE, ids=[m for m, _, _ in MORE])
def test_more_phrasings(message: str, asked: Any, expected: dict[str, Any]) -> None:
    got = read(message, asked=asked).model_dump()
    assert {k: got[k] for k in expected} == expected


def test_the_understanding_folds_messages_later_ones_win() -> None:
    asked = CONTACT_QUESTION
    got = understand(DEFAULT_GOAL, [Turn("It's Paul Smith, paul.smtih@example.com", asked),
                                    Turn("sorry, the e-mail is paul.smith@example.com"),
                                    Turn("make it three seats"), Turn("switch to the 21:15 show")])
    assert (got.name, got.email, got.count, got.showtime, got.day_part) == (
        "Paul Smith", "paul.smith@example.com", 3, "21:15", None)
    # An answer going on in a second message, said before the agent asked again.
    assert understand(DEFAULT_GOAL, [Turn("maria@example.com", asked), Turn("Maria Lopez")]).name == "Maria Lopez"
    assert understand(DEFAULT_GOAL, [Turn("Maria Lopez")]).name is None  # said unasked: not a name
    # The answers that did not help, in a row; a useful one resets the count.
    silly = understand(DEFAULT_GOAL, [Turn("what?", asked), Turn("ok", asked)])
    assert silly.unhelpful == ("what?", "ok")
    assert understand(DEFAULT_GOAL, [Turn("what?", asked), Turn("Ada Lovelace", asked)]).unhelpful == ()
    # A yes to the guess the agent quoted takes it.
    guessed = understand(DEFAULT_GOAL, [Turn("my email is john at example dot com", asked),
                                        Turn("yes", "Did you mean john@example.com?")])
    assert guessed.email == "john@example.com" and guessed.unhelpful == ()
    # Cancelling, and a change after it.
    assert understand(DEFAULT_GOAL, [Turn("cancel that")]).cancel
    assert not understand(DEFAULT_GOAL, [Turn("cancel that"), Turn("no wait, make it 2 seats")]).cancel
    # A contact profile is the base; the goal and the messages win over it.
    profile = Contact.parse("Ada Lovelace <ada@example.com>")
    assert understand("Book 1 seat for Dune", [], contact=profile).name == "Ada Lovelace"
    assert understand("Book 1 seat for Dune, name Grace Hopper", [], contact=profile).name == "Grace Hopper"


def test_a_contact_profile_needs_a_name_and_an_address() -> None:
    assert Contact.parse("Ada Lovelace <ada@example.com>") == Contact("Ada Lovelace", "ada@example.com")
    assert str(Contact.parse("Ada Lovelace, ada@example.com")) == "Ada Lovelace <ada@example.com>"
    for bad in ("ada@example.com", "Ada Lovelace", ""):
        with pytest.raises(ValueError, match="missing"):
            Contact.parse(bad)


# --- sessions ------------------------------------------------------------------------------------
def _questions(session: Session) -> list[str]:
    return [e["payload"]["text"] for e in session.sent("agent.message") if e["payload"].get("kind") == "question"]


def _readings(session: Session) -> list[dict[str, Any]]:
    return session.logged("note", "user.reading")


def _no_question_twice(session: Session) -> None:
    asked = _questions(session)
    assert all(a != b for a, b in itertools.pairwise(asked)), asked


def _book(tmp_path: Path, host: str, case: dict[str, Any], **kwargs: Any) -> Session:
    """A session for ``case``: its goal; its person's messages answering the agent's questions, in
    order; a correction said unasked right after the contact details were entered."""
    answers = list(case.get("earlier", []))
    faults: list[str] = []
    if case["category"] == "correction":
        faults.append(f"goal_change:enter_contact:1:{case['message']}")
    elif case["message"] is not None:
        answers.append(case["message"])
    return run(tmp_path, host=host, goal=_here(case.get("goal") or DEFAULT_GOAL), fault_specs=faults,
               host_kwargs={"user_answers": answers}, **kwargs)


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize("case", USABLE_CONTACT, ids=[c["id"] for c in USABLE_CONTACT])
def test_the_agent_books_for_every_usable_contact_case(tmp_path: Path, host: str, case: dict[str, Any]) -> None:
    session = _book(tmp_path, host, case)
    assert session.result.outcome == "completed", (session.result, _questions(session))
    booked = session.booked
    assert booked.reference is not None and booked.movie == "Dune: Part Two" and booked.seats == 2
    assert (booked.name, booked.email) == (case["expected"]["name"], case["expected"]["email"])
    _no_question_twice(session)
    asked = _questions(session)
    if case["category"] == "in_goal":
        assert asked == []  # everything was in the goal: nothing to ask
    elif case["category"] == "split":
        assert asked[0] == CONTACT_QUESTION and len(asked) == 2
        first = read(case["earlier"][0], asked="contact")  # the follow-up says what the first answer gave
        assert asked[1].startswith("Thanks, I have ") and str(first.name or first.email) in asked[1]
    else:
        assert asked == [CONTACT_QUESTION]
    assert all(r["outcome"] == "usable" for r in _readings(session))
    if case["category"] == "correction":  # the details were entered again, corrected, before booking
        contacts = [p for n, p in session.calls() if n == "enter_contact"]
        assert len(contacts) == 2 and set(contacts[-1].values()) == {booked.name, booked.email}
    if case["id"] == "g02":  # "around 8pm": the nearest showtime within 90 minutes
        assert booked.time == {"reference": "20:30", "alt": "21:00"}[host]


PROFILE = Contact("Grace Hopper", "grace@example.com")
GOAL_CHANGES = [c for c in CASES if c["category"] == "goal_change"]
# The default goal picks the first evening show: 20:30 on the reference host, 18:00 on the alt host.
# What each showtime change leads to there (None: no such showtime, so the agent stops, saying why).
SHOWTIME = {"i02": {"reference": None, "alt": "21:00"}, "i06": {"reference": "17:30", "alt": "13:15"},
            "i07": {"reference": None, "alt": None}, "i11": {"reference": None, "alt": "21:00"}}


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize("case", GOAL_CHANGES, ids=[c["id"] for c in GOAL_CHANGES])
def test_goal_changes_from_the_corpus_mid_session(tmp_path: Path, host: str, case: dict[str, Any]) -> None:
    # The contact comes from the profile (no question); the change arrives once a showtime is chosen.
    session = run(tmp_path, host=host, goal=_here(DEFAULT_GOAL), contact=PROFILE,
                  fault_specs=[f"goal_change:select_showtime:1:{case['message']}"])
    assert _questions(session) == []
    expected, booked = case["expected"], session.booked
    if expected.get("cancel"):
        assert session.result.outcome == "cancelled" and session.result.exit_code == 0
        assert booked.reference is None and "enter_contact" not in [n for n, _ in session.calls()]
        assert session.sent("agent.message")[-1]["payload"]["text"].endswith("nothing was booked.")
        return
    if "seats" in expected:
        assert session.result.outcome == "completed"
        assert booked.seats == expected["seats"] and booked.name == PROFILE.name
        return
    want = SHOWTIME[case["id"]][host]
    if want is None:
        assert session.result.outcome == "blocked" and booked.reference is None
        text = session.sent("agent.message")[-1]["payload"]["text"]
        assert text.startswith("No showtime of Dune: Part Two matches") and "Available:" in text, text
    else:
        assert session.result.outcome == "completed" and booked.time == want
        names = [n for n, _ in session.calls()]
        assert names[names.index("select_showtime") + 1] == "go_back"  # it went back to change the showtime


@pytest.mark.parametrize("host", HOSTS)
def test_three_unusable_answers_end_blocked_with_the_clarifications_logged(tmp_path: Path, host: str) -> None:
    unusable = [c["message"] for c in CASES if c["category"] == "unusable"]
    answers = [unusable[0], unusable[5], unusable[7]]  # "what?", "ok", "asdfgh"
    session = run(tmp_path, host=host, goal=_here(DEFAULT_GOAL), host_kwargs={"user_answers": answers})
    assert session.result.outcome == "blocked" and session.result.exit_code == 0
    assert session.booked.reference is None and "enter_contact" not in [n for n, _ in session.calls()]
    asked = _questions(session)
    assert len(asked) == MAX_UNHELPFUL_ANSWERS and asked[0] == CONTACT_QUESTION
    _no_question_twice(session)
    for question, answer in zip(asked[1:], answers, strict=False):  # each clarification quotes the answer
        assert f'"{answer}"' in question and "no name and no e-mail address" in question
    blocked = session.sent("agent.message")[-1]["payload"]
    assert blocked["kind"] == "blocked" and all(f'"{a}"' in blocked["text"] for a in answers)
    assert session.sent()[-1]["type"] == "session.end"
    (logged,) = session.logged("recovery", "unhelpful_answers")
    assert logged["code"] == "UNHELPFUL_ANSWERS"
    assert logged["data"]["answers"] == answers and logged["data"]["questions"] == asked
    assert [r["outcome"] for r in _readings(session)] == ["unusable"] * 3


@pytest.mark.parametrize("host", HOSTS)
def test_an_unusable_answer_gets_a_clarifying_question_then_the_booking_goes_on(tmp_path: Path, host: str) -> None:
    # The spelled-out address (u04) is quoted back as a guess; "yes" takes it; the name is asked for.
    answers = ["my email is john at example dot com", "yes", "John Smith"]
    session = run(tmp_path, host=host, goal=_here(DEFAULT_GOAL), host_kwargs={"user_answers": answers})
    assert session.result.outcome == "completed"
    assert (session.booked.name, session.booked.email) == ("John Smith", "john@example.com")
    asked = _questions(session)
    assert asked[0] == CONTACT_QUESTION and asked[1].startswith("Did you mean john@example.com?")
    assert re.search(r"Which name should I use\?$", asked[2]), asked
    assert [r["outcome"] for r in _readings(session)] == ["unusable", "usable", "usable"]


@pytest.mark.parametrize("host", HOSTS)
def test_a_host_that_never_answers_ends_no_answer_within_the_bound(tmp_path: Path, host: str) -> None:
    session = run(tmp_path, host=host, goal=_here(DEFAULT_GOAL), host_kwargs={"user_answers": []},
                  question_timeout_s=1.0)
    assert session.result.outcome == "no_answer" and session.result.exit_code == 6
    assert _questions(session) == [CONTACT_QUESTION]
    assert session.sent("agent.message")[-1]["payload"]["text"].endswith("no answer to my question within 1s")


@pytest.mark.parametrize("host", HOSTS)
def test_a_contact_profile_books_without_asking(tmp_path: Path, host: str) -> None:
    session = run(tmp_path, host=host, goal=_here(DEFAULT_GOAL), contact=PROFILE,
                  host_kwargs={"user_answers": []})  # nobody would answer a question
    assert session.result.outcome == "completed" and _questions(session) == []
    assert (session.booked.name, session.booked.email) == (PROFILE.name, PROFILE.email)
    begin = session.records[0]["data"]["config"]
    assert begin["contact"] == {"name": PROFILE.name, "email": PROFILE.email}


@pytest.mark.parametrize("host", HOSTS)
def test_calling_it_off_after_the_booking_is_confirmed_is_answered_honestly(tmp_path: Path, host: str) -> None:
    session = run(tmp_path, host=host, goal=_here(DEFAULT_GOAL), contact=PROFILE,
                  fault_specs=["goal_change:confirm_booking:1:cancel that"])
    assert session.result.outcome == "completed" and session.booked.reference is not None
    report = session.sent("agent.message")[-1]["payload"]["text"]
    assert report.startswith("Booked ")
    assert report.endswith("the booking was already confirmed; I cannot cancel it here.")


@pytest.mark.parametrize("host", HOSTS)
def test_an_answer_in_two_messages_completes_the_contact(tmp_path: Path, host: str) -> None:
    # The person answers the one question with two messages in a row, the address first.
    answers = [["maria.lopez@example.com", "Maria Lopez"]]
    session = run(tmp_path, host=host, goal=_here(DEFAULT_GOAL), host_kwargs={"user_answers": answers})
    assert session.result.outcome == "completed"
    assert (session.booked.name, session.booked.email) == ("Maria Lopez", "maria.lopez@example.com")
    asked = _questions(session)
    assert asked[0] == CONTACT_QUESTION and len(asked) <= 2  # at most a follow-up the second message answers
    assert [r["outcome"] for r in _readings(session)] == ["usable", "usable"]


UNUSABLE = [c for c in CASES if c["category"] == "unusable"]


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize("case", UNUSABLE, ids=[c["id"] for c in UNUSABLE])
def test_each_unusable_answer_gets_a_clarifying_question_not_the_same_one(tmp_path: Path, host: str,
                                                                       case: dict[str, Any]) -> None:
    answers = [case["message"], "Ada Lovelace <ada@example.com>"]
    session = run(tmp_path, host=host, goal=_here(DEFAULT_GOAL), host_kwargs={"user_answers": answers})
    assert session.result.outcome == "completed" and session.booked.name == "Ada Lovelace"
    first, second = _questions(session)
    assert first == CONTACT_QUESTION and second != first
    assert f'"{case["message"]}"' in second  # the clarification quotes what it could not use
    assert [r["outcome"] for r in _readings(session)] == ["unusable", "usable"]
