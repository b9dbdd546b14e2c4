"""Consent detection: does this message approve the proposed plan as it stands?

Deterministic and model-free, and deliberately asymmetric: finalising a goal the user did not
want is worse than one more refinement round (which the user can answer with "looks good"), so
anything that is not clearly an unconditional approval is *not* consent.

The message is normalised (case, apostrophes, emoji mapped to words) and split into clauses at
punctuation and at conjunctions ("but", "though", "if", "after", ...). Each clause is one of:

- ``negative``: a negation, refusal or hedge ("not yet", "no", "wait", "maybe", "so far",
  "for now", "at the moment": fine as it stands is not "save it as my goal").
- ``request``: asks for a change or for something new (an edit verb, "I want", "what about",
  "first", a question that is not a request to save).
- ``positive``: an approval ("looks good", "yes", "save it", a thumbs-up) with nothing else in it
  but filler words ("to me", "the plan", "please").
- ``neutral``: only filler ("thanks!", "I'm excited", "I'm done"). "Done" is filler, not approval:
  "I'm done" may mean done editing, done for today or done with the app, so on its own it refines
  (the next reply asks again); "done, save it" approves.
- ``unknown``: anything else ("yes the design phase is too long").

Consent means at least one positive clause and every other clause positive or neutral.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

ClauseKind = Literal["positive", "negative", "request", "neutral", "unknown"]


@dataclass(frozen=True)
class Clause:
    text: str
    kind: ClauseKind
    question: bool


@dataclass(frozen=True)
class ConsentResult:
    """``consent`` and the clauses that decided it (for logs and tests)."""

    consent: bool
    clauses: tuple[Clause, ...]

    @property
    def reason(self) -> str:
        """Each clause's kind and text: quotes the user's message, so for DEBUG logs and tests only."""
        return "; ".join(f"{c.kind}: {c.text!r}" for c in self.clauses) or "empty message"

    @property
    def code(self) -> str:
        """The clause kinds in order (``positive,negative,request``): safe to log at INFO."""
        return ",".join(c.kind for c in self.clauses) or "empty"


_EMOJI_WORDS = {
    "👍": " ok ", "👌": " ok ", "✅": " ok ", "✔": " ok ", "☑": " ok ", "🆗": " ok ", "💯": " perfect ",
    "🙌": " great ", "🔥": " great ", "😍": " love it ", "❤": " love it ", "♥": " love it ", "🥰": " love it ",
    "🚀": " lets go ", "🤝": " deal ",
    "👎": " no ", "❌": " no ", "🚫": " no ", "✋": " wait ", "🛑": " wait ", "🤔": " hmm ", "😕": " hmm ",
    "🙁": " hmm ", "😐": " hmm ",
}

# Phrases that contain a negation word but approve; replaced by a marker before anything else.
_APPROVING_NEGATIONS = re.compile(
    r"\b(?:no|without) (?:more |further |other |additional )?(?:changes?|edits?|notes?|complaints?|objections?)"
    r"(?: needed| required| necessary| from me)?\b"
    r"|\bnothing (?:else |more )?to (?:change|add|edit)\b|\bnothing else\b"
    r"|\bdon'?t change (?:a thing|anything)\b|\bdo not change (?:a thing|anything)\b"
    r"|\bwhy not\b|\bcouldn'?t be better\b|\bcouldn'?t agree more\b")
# Phrases with a negation word that say nothing about the plan.
_NEUTRAL_NEGATIONS = re.compile(r"\bno problem\b|\bno worries\b|\bcan'?t wait\b|\bcannot wait\b")

_NEGATIVE = re.compile(
    r"\b(?:no|nope|nah|not|never|don'?t|do not|doesn'?t|does not|isn'?t|is not|aren'?t|won'?t|wouldn'?t"
    r"|shouldn'?t|can'?t|cannot|didn'?t|haven'?t|wait|hold on|hold off|stop|cancel|hmm+|uh+|um+|meh"
    r"|maybe|perhaps|probably|unsure|i guess|i suppose|kind of|kinda|sort of|almost|nearly|yet"
    r"|later|wrong|bad|hate|dislike|disagree|reject|rejected|decline"
    # Hedges: approval of the plan as it stands *for now* is not consent to save it as the goal.
    r"|so far|for now|for the moment|at the moment|for the time being|as of now|up to now|until now"
    r"|at this point|at this stage|in principle|in theory|tentatively|provisionally|mostly|more or less)\b")

# Verbs and phrases that ask for a change or for new content.
_REQUEST = re.compile(
    r"\b(?:add|adding|move|moving|change|changing|adjust|remove|removing|delete|drop|replace|shift|push|pull"
    r"|reschedule|rename|split|merge|extend|shorten|lengthen|swap|update|edit|tweak|modify|include|insert"
    r"|put|make|turn|set|spread|reduce|increase|decrease|combine|reorder|rearrange|rewrite|redo|instead"
    r"|more|less|fewer|earlier|sooner|longer|shorter|faster|slower|first|before|after|then|should|could"
    r"|would|need|needs|want|wanna|prefer|rather|what about|how about|what if|also|plus|another|new"
    r"|create a|i'?d like|i would like|let'?s add|let'?s change|let'?s move)\b")

# Explicit requests to finalise: a clause with one of these and no edit verb approves, even as a
# question ("can you save it?") or with a modal ("I'd like to save it").
_SAVE_ACTIONS = re.compile(
    r"\b(?:save|saving|finali[sz]e|finali[sz]ing|approve|approved|confirm|confirmed|commit|proceed"
    r"|go ahead|go for it|do it|do this|ship it|lock it in|lock it|lock this in|make it official"
    r"|create (?:it|the goal|this goal|my goal|that goal)|set it up|accept|accepted)\b")
_EDIT_VERBS = re.compile(
    r"\b(?:add|move|change|adjust|remove|delete|drop|replace|shift|push|pull|reschedule|rename|split|merge"
    r"|extend|shorten|swap|update|edit|tweak|modify|include|insert|put|reduce|increase|decrease|reorder"
    r"|rewrite|redo)\b")

_POSITIVE = re.compile(
    r"\b(?:exactly what i (?:wanted|needed|was looking for)|yes|yeah|yea|yep|yup|ya|yas|yass|yesss*"
    r"|ok|okay|okey|okie|k|kk|sure|alright|all right|fine|good"
    r"|great|perfect|excellent|awesome|amazing|fantastic|brilliant|wonderful|nice|cool|love it|love this"
    r"|i love it|lgtm|agree|agreed|deal|correct|right|exactly|absolutely|definitely|of course"
    r"|sounds good|looks good|works for me|that works|it works|let'?s do it|let'?s do this|let'?s go"
    r"|all good|good to go|spot on|nailed it|count me in|happy with|satisfied|that'?s it|that'?s the one"
    r"|approving"
    r"|save|saving|finali[sz]e|finali[sz]ing|approve|approved|confirm|confirmed|commit|proceed"
    r"|go ahead|go for it|do it|ship it|lock it in|make it official|accept|accepted"
    r"|create (?:it|the goal|this goal|my goal|that goal)|set it up|__approving__)\b")

# Words that may surround an approval without changing its meaning.
_FILLER = frozenset(re.findall(r"\S+", """
a an the it its it's this that these those these's plan goal one me my mine to for with of as is are was
be been looks look looked sounds sound seems seem seemed feels feel i i'm im we us you your you're
let's lets please pls plz thanks thank thx ty cheers so very really much lot just totally pretty
quite super all everything well now oh wow haha lol yay woohoo hooray excited start begin ready
can could would will here there go and honestly actually then great awesome amazing
nice cool perfect good love done __neutral__
"""))

_CLAUSE_SPLIT = re.compile(
    r"([.,;:!?\n]+|\s(?:but|however|though|although|except|unless|if|once|after|before|and then|then"
    r"|as long as|only if|provided|while)\s)")


_RESERVATIONS = frozenset({"but", "however", "though", "although", "except", "unless", "if", "as long as",
                           "only if", "provided"})


def detect_consent(message: str) -> ConsentResult:
    """Classify ``message``; ``consent`` is True only for a clear, unconditional approval."""
    clauses = tuple(_clauses(_normalise(message)))
    kinds = {c.kind for c in clauses}
    consent = "positive" in kinds and kinds <= {"positive", "neutral"}
    return ConsentResult(consent=consent, clauses=clauses)


def _normalise(message: str) -> str:
    text = unicodedata.normalize("NFKC", message).casefold()
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("`", "'")
    for emoji, words in _EMOJI_WORDS.items():
        text = text.replace(emoji, words)
    # Any other emoji or symbol carries no decision.
    text = "".join(ch if not unicodedata.category(ch).startswith("S") else " " for ch in text)
    text = _APPROVING_NEGATIONS.sub(" __approving__ ", text)
    text = _NEUTRAL_NEGATIONS.sub(" __neutral__ ", text)
    return text


def _clauses(text: str) -> list[Clause]:
    pieces = _CLAUSE_SPLIT.split(" " + text + " ")
    out: list[Clause] = []
    # re.split with a capture group alternates text and delimiter.
    for i in range(0, len(pieces), 2):
        body = " ".join(re.findall(r"[\w']+", pieces[i]))
        delimiter = pieces[i + 1] if i + 1 < len(pieces) else ""
        if body:
            out.append(Clause(text=body, kind=_kind(body, "?" in delimiter), question="?" in delimiter))
        word = delimiter.strip()
        if word in _RESERVATIONS:
            # "but", "if", "unless": whatever follows (even nothing) makes the approval conditional.
            out.append(Clause(text=word, kind="negative", question=False))
    return out


def _kind(clause: str, question: bool) -> ClauseKind:
    if _NEGATIVE.search(clause):
        return "negative"
    if _SAVE_ACTIONS.search(clause) and not _EDIT_VERBS.search(clause) and _only_filler(clause):
        return "positive"
    if question or _REQUEST.search(clause):
        return "request"
    if _POSITIVE.search(clause) and _only_filler(clause):
        return "positive"
    if all(word in _FILLER for word in clause.split()):
        return "neutral"
    return "unknown"


def _only_filler(clause: str) -> bool:
    """After removing the approval phrases, only filler words are left."""
    rest = _POSITIVE.sub(" ", clause)
    rest = re.sub(r"\b(?:can|could|would|will|i'?d like to|i would like to|want to|please)\b", " ", rest)
    return all(word in _FILLER for word in rest.split())
