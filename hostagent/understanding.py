"""What people say, read into the booking (issue 32): contact details and changes of the goal from
ordinary language, whatever the host's own phrasing.

``read(text, asked=...)`` reads one message: a name and an e-mail address (anywhere, in angle
brackets, after "reach me at", with trailing punctuation; a name given as "it's for ...", "book it
under ...", "name: ...", "I'm ...", alone on a line, after the address...), a number of seats, a
showtime (``later`` / ``earlier`` / ``HH:MM``), a date, a part of the day, a coupon, and whether the
person calls the booking off. ``asked`` is the topic of the question the message answers (a bare
"Zoe Miller" is a name only when a name was asked for). ``usable`` says whether the message gave
the agent anything to act on.

``understand(goal, turns)`` folds the goal and the person's messages (oldest first) into one
``Understanding``: a later message wins (corrections, "make it three seats"), a part given in one
message completes one given in another, and the answers that did not help are counted (the agent
stops after ``MAX_UNHELPFUL_ANSWERS`` of them in a row).

Rules, not a model: they run offline and the same for both planners, and their accuracy is measured
on a corpus written by someone who had not read them (``tests/hostagent/data/answer_corpus.json``).
See docs/host-protocol.md, "Reading what people say".
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

Topic = Literal["contact", "name", "email", "movie"]
Relative = Literal["later", "earlier"]
MAX_UNHELPFUL_ANSWERS = 3
"""Answers in a row that did not help before the agent stops as ``blocked``."""
MAX_READ_CHARS = 2000
"""How much of one message is read (an answer is short; the rest of a longer text is not read)."""

# Bounded parts: a search stays linear in the text, whatever it holds.
EMAIL = re.compile(r"[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63}){1,8}")
_SPELLED_EMAIL = re.compile(r"\b([\w.+-]{1,64})\s*[\[(]?\s*\bat\b\s*[\])]?\s*([\w-]+)"
                            r"((?:\s*[\[(]?\s*\bdot\b\s*[\])]?\s*[\w-]+)+)", re.IGNORECASE)
_NOT_BEFORE = re.compile(r"\b(?:not|isn'?t|wrong|instead\s+of)\s*[:,]?\s*$", re.IGNORECASE)
_DATE = re.compile(r"\b(\d{4}-\d{2}-\d{2})\b")
_TIME24 = re.compile(r"\b([01]?\d|2[0-3])[:.h]([0-5]\d)\b(?!\s*[ap]\.?m\b)", re.IGNORECASE)
_TIME12 = re.compile(r"\b(1[0-2]|0?[1-9])(?:[:.]([0-5]\d))?\s*([ap])\.?m\b\.?", re.IGNORECASE)
_APPROXIMATE = re.compile(r"\b(?:around|about|approximately|roughly|like\s+the|something\s+like|or\s+so)\b|ish\b",
                          re.IGNORECASE)
_RELATIVE = re.compile(r"\b(later|earlier)\s+(?:show(?:ing)?s?|screenings?|sessions?|ones?|times?|slots?|film|movie|"
                       r"please|instead)\b|\b(?:the|a|an|something)\s+(later|earlier)\b", re.IGNORECASE)
_NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
            "ten": 10, "a": 1, "an": 1, "single": 1, "pair of": 2, "couple of": 2}
_COUNT = re.compile(r"\b(\d{1,2}|one|two|three|four|five|six|seven|eight|nine|ten|a|an|single|pair of|couple of)\s+"
                    r"(?:\w+\s+)?(?:seats?|tickets?|places?|people|persons)\b", re.IGNORECASE)
_COUNT_PEOPLE = re.compile(r"\b(?:(\d{1,2}|two|three|four|five|six|seven|eight|nine|ten)\s+of\s+us|"
                           r"we(?:'re|\s+are)\s+(\d{1,2}|two|three|four|five|six|seven|eight|nine|ten)\b|"
                           r"(?:just|only)\s+(me|myself)\b)", re.IGNORECASE)
_COUPON = re.compile(r"\b(?:coupon|promo(?:\s+code)?|discount(?:\s+code)?|voucher)\s*(?:code\s*)?:?\s*"
                     r"([A-Za-z0-9]{3,16})\b", re.IGNORECASE)
_DAY_PARTS = {"morning": "morning", "afternoon": "afternoon", "matinee": "afternoon", "evening": "evening",
              "tonight": "evening", "night": "evening"}
_CANCEL = re.compile(r"\bcancel\b(?!\s+(?:the\s+)?(?:coupon|promo|voucher))|\bnever\s*mind\b|\bcall\s+it\s+off\b|"
                     r"\bforget\s+(?:it|about\s+it|the\s+(?:booking|tickets|whole\s+thing))\b|"
                     r"\b(?:don'?t|do\s+not|no\s+longer)\s+(?:want|need)\s+(?:to\s+book|it|them|the\s+(?:tickets|"
                     r"seats|booking))\b|\b(?:don'?t|do\s+not)\s+book\b|\bscrap\s+(?:it|that|the\s+booking)\b|"
                     r"^\W*(?:stop|abort)\W*$", re.IGNORECASE)
_YES = re.compile(r"^\s*(?:yes|yep|yeah|yup|correct|right|exactly|that'?s\s+(?:right|it|correct))\b", re.IGNORECASE)

# A name follows these cues. strength 3: says it is a name; 2: usually introduces one ("it's for",
# "I'm"), taken only in an answer to a contact question or next to an e-mail address.
_CUES: tuple[tuple[re.Pattern[str], int, bool], ...] = (
    (re.compile(r"\bname(?:\s+of|\s*'s|\s+is|\s+was|\s+should\s+be)?(?:\s+(?:spelled|spelt|actually))?"
                r"\s*[:=,\-\u2013\u2014]?\s+", re.IGNORECASE), 3, True),
    (re.compile(r"\bnamed\s+", re.IGNORECASE), 3, True),
    (re.compile(r"\bunder\s+(?:the\s+name\s+(?:of\s+)?)?", re.IGNORECASE), 3, False),
    (re.compile(r"\bcall\s+me\s+", re.IGNORECASE), 3, False),
    (re.compile(r"\b(?:i'?m|i\s+am|this\s+is|it'?s|it\s+is)\s+(?:for\s+)?", re.IGNORECASE), 2, False),
    (re.compile(r"\bfor\s+(?:me\s*[,:]?\s+)?", re.IGNORECASE), 2, False),
)
# "Dana for the name", "use Dana as the name": the cue after the name.
_NAME_BEFORE_CUE = re.compile(r"\s+(?:for|as)\s+(?:the\s+)?name\b", re.IGNORECASE)
_PARTICLES = frozenset({"van", "von", "de", "da", "del", "della", "der", "den", "di", "du", "dos", "das", "la", "le",
                        "bin", "al", "el", "ter", "ten"})
_NOT_NAMES = frozenset({
    "i", "i'm", "i'd", "i'll", "im", "id", "me", "my", "mine", "you", "your", "we", "us", "our", "they", "he", "she",
    "it", "it's", "its", "this", "that", "these", "those", "there", "here", "a", "an", "the", "and", "or", "but",
    "so", "if", "then", "than", "to", "at", "of", "in", "on", "by", "for", "from", "with", "as", "is", "are", "was",
    "be", "am", "do", "does", "did", "can", "could", "would", "should", "will", "shall", "may", "might", "must",
    "have", "has", "had", "not", "no", "yes", "yeah", "yep", "ok", "okay", "sure", "hi", "hello", "hey", "dear",
    "thanks", "thank", "please", "cheers", "sorry", "wait", "oh", "ah", "hmm", "um", "well", "right", "just", "also",
    "actually", "correction", "typo", "same", "again", "now", "email", "e-mail", "mail", "address", "name", "names",
    "contact", "phone", "number", "reach", "send", "put", "book", "booking", "reserve", "reservation", "call", "use",
    "tickets", "ticket", "seat", "seats", "place", "places", "show", "showing", "shows", "screening", "film",
    "movie", "cinema", "tonight", "today", "tomorrow", "morning", "afternoon", "evening", "night", "later",
    "earlier", "cancel", "stop", "maybe", "great", "never", "mind", "make", "switch", "change", "let", "let's",
    "lets", "go", "what",
    "why", "who", "how", "when", "where", "which", "whatever", "anything", "nothing", "something", "everything",
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "january", "february", "march",
    "april", "june", "july", "august", "september", "october", "november", "december", "mr", "mrs", "ms", "miss",
    "dr", "sir", "madam"
})
_TOKEN = re.compile(r"<EMAIL>|[^\W\d_][^\s,;:!?()<>\[\]/|\"\u201c\u201d\u2013\u2014]*|\S")
_WHEN_AFTER = re.compile(r"^\s*(?:\d|tonight|today|tomorrow|on|at|this|next|in\s+the|around|evening|morning|afternoon|"
                         r"show|showing|screening|movie|film)\b", re.IGNORECASE)
# Words that may stand between a name and the address it belongs to ("Grace Kim. Email grace@...").
_CONNECTORS = frozenset({"and", "my", "email", "e-mail", "mail", "address", "is", "at", "reach", "me", "you", "can",
                         "send", "it", "to", "the", "tickets", "confirmation", "please", "thanks", "or", "via"})


_FILLERS = frozenset({"ok", "okay", "sure", "yes", "hi", "hello", "hey", "sorry", "oh", "right", "it's", "its", "s",
                      "well", "so", "thing", "fine", "of", "course", "my", "is", "it"})


@dataclass(frozen=True)
class Contact:
    """Who the booking is for: a profile given up front (``--contact "Name <email>"``,
    ``AgentConfig.contact``), so the agent need not ask."""

    name: str
    email: str

    @classmethod
    def parse(cls, text: str) -> Contact:
        """``"Ada Lovelace <ada@example.com>"`` (or any phrasing ``read`` takes: "Ada Lovelace,
        ada@example.com"); ValueError when the name or the address is missing."""
        found = read(text, asked="contact")
        if found.name is None or found.email is None:
            missing = " and ".join(k for k, v in (("a name", found.name), ("an e-mail address", found.email)) if not v)
            raise ValueError(f'expected "Name <email>", {missing} is missing in {text!r}')
        return cls(name=found.name, email=found.email)

    def __str__(self) -> str:
        return f"{self.name} <{self.email}>"


class Reading(BaseModel):
    """What one message says (None: not said)."""

    model_config = ConfigDict(frozen=True)

    name: str | None = None
    email: str | None = None
    seats: int | None = None
    showtime: str | None = None
    """``later`` | ``earlier`` | ``HH:MM`` (a time wins over a direction said with it)."""
    relative: Relative | None = None
    approximate: bool = False
    date: str | None = None
    day_part: str | None = None
    coupon: str | None = None
    cancel: bool = False
    movie: str | None = None
    """A movie title of ``titles`` the message names."""
    confirms: bool = False
    """A plain yes (to a question that quoted a guess)."""
    guess: str | None = None
    """An address spelled out ("john at example dot com"): not taken, but asked about."""
    usable: bool = False


@dataclass(frozen=True)
class Turn:
    """One message of the person, with the agent's question it answers (None: said unasked)."""

    text: str
    question: str | None = None


class Understanding(BaseModel):
    """Everything the goal and the person's messages said so far; a later message wins."""

    model_config = ConfigDict(frozen=True)

    name: str | None = None
    email: str | None = None
    count: int | None = None
    """Seats."""
    date: str | None = None
    time: str | None = None
    day_part: str | None = None
    relative: Relative | None = None
    relative_turn: int | None = None
    """Which message (0: the goal) asked for the later/earlier show: the planner anchors it once."""
    approximate: bool = False
    coupon: str | None = None
    cancel: bool = False
    unhelpful: tuple[str, ...] = ()
    """The latest answers to questions that did not help, in a row (reset by one that did)."""
    guess: str | None = None
    """An address the latest unhelpful answer spelled out, to ask about."""
    last: Reading | None = None
    """The reading of the latest message, in its context (its question, a confirmed guess)."""

    @property
    def showtime(self) -> str | None:
        return self.time or self.relative

    def summary(self) -> dict[str, Any]:
        """What the agent understood, for the log and the LLM planner's context."""
        return {"name": self.name, "email": self.email, "seats": self.count, "showtime": self.showtime,
                "date": self.date, "dayPart": self.day_part, "coupon": self.coupon, "cancel": self.cancel,
                "unhelpfulAnswers": list(self.unhelpful)}

    def known_contact(self) -> str:
        """The contact details understood so far, in words ("the name Zoe Miller and no e-mail address")."""
        name = f"the name {self.name}" if self.name else "no name"
        email = f"the e-mail address {self.email}" if self.email else "no e-mail address"
        return f"{name} and {email}"


def topic_of(question: str | None) -> Topic | None:
    """What a question of the agent asks for, from its words."""
    if not question:
        return None
    lowered = question.lower()
    name = bool(re.search(r"\bnames?\b", lowered))
    email = bool(re.search(r"\be-?mail|\baddress\b", lowered))
    if name and email:
        return "contact"
    if name:
        return "name"
    if email:
        return "email"
    return "movie" if re.search(r"\b(?:movie|film)\b", lowered) else None


def read(text: str, *, asked: Topic | None = None, titles: Collection[str] = ()) -> Reading:
    """What ``text`` says; ``asked``: the topic of the question it answers; ``titles``: movie titles
    (never taken as a name)."""
    found: dict[str, Any] = {}
    text = text[:MAX_READ_CHARS].replace("\u2019", "'")  # typographic apostrophes (U+2019) read as plain ones
    email, spans = _email(text)
    if email is not None:
        found["email"] = email
    masked = text
    for start, end in reversed(spans):
        masked = f"{masked[:start]} <EMAIL> {masked[end:]}"
    if email is None and (m := _SPELLED_EMAIL.search(text)):
        found["guess"] = f"{m.group(1)}@{m.group(2)}" + "".join(
            f".{part}" for part in re.findall(r"dot\b\s*[\])]?\s*([\w-]+)", m.group(3), re.IGNORECASE))
        masked = masked[:m.start()] + " <EMAIL> " + masked[m.end():]
    local = {w for start, end in spans for w in re.split(r"[._+-]+", text[start:end].split("@")[0].lower())
             if len(w) > 1}
    name = _name(masked, asked=asked, has_email=bool(spans) or "guess" in found, titles=titles, local=local)
    if name is not None:
        found["name"] = name
    found.update(_booking(masked))
    padded = f" {_plain(text)} "
    named = [t for t in titles if len(_plain(t)) >= 4 and f" {_plain(t)} " in padded]
    if named:
        found["movie"] = max(named, key=len)
    if _YES.match(text):
        found["confirms"] = True
    changes = any(k in found for k in ("seats", "showtime", "date", "day_part", "coupon", "cancel", "movie"))
    if asked in ("contact", "name", "email"):
        found["usable"] = "name" in found or "email" in found or changes
    elif asked == "movie":  # any words that may be a title are worth a search
        words = [w for w in re.findall(r"[^\W\d_]{2,}", text.lower()) if w not in _NOT_NAMES]
        found["usable"] = changes or (bool(words) and not text.strip().endswith("?"))
    else:
        found["usable"] = bool(found.keys() - {"guess", "confirms"})
    return Reading(**found)


def _plain(text: str) -> str:
    return " ".join(re.sub(r"[^\w]+", " ", text.lower()).split())


def _email(text: str) -> tuple[str | None, list[tuple[int, int]]]:
    """The address a message gives (the last one, unless it is the one called wrong) and where every
    address is."""
    matches = list(EMAIL.finditer(text))
    spans = [(m.start(), m.end()) for m in matches]
    chosen = [m for m in matches if not _NOT_BEFORE.search(text[:m.start()])]
    pick = (chosen or matches)[-1] if matches else None
    return (pick.group(0).rstrip(".-") if pick else None), spans


def _booking(text: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if m := _DATE.search(text):
        out["date"] = m.group(1)
    clean = _DATE.sub(" ", text)
    times = [(m.start(), f"{int(m.group(1)):02d}:{m.group(2)}") for m in _TIME24.finditer(clean)]
    for m in _TIME12.finditer(clean):
        hour = int(m.group(1)) % 12 + (12 if m.group(3).lower() == "p" else 0)
        times.append((m.start(), f"{hour:02d}:{m.group(2) or '00'}"))
    relative = _RELATIVE.search(clean)
    if relative is not None:
        out["relative"] = (relative.group(1) or relative.group(2)).lower()
    if times:
        out["showtime"] = min(times)[1]
        out["approximate"] = bool(_APPROXIMATE.search(clean))
    elif relative is not None:
        out["showtime"] = out["relative"]
    lowered = clean.lower()
    for word, part in _DAY_PARTS.items():
        if re.search(rf"\b{word}\b", lowered):
            out["day_part"] = part
            break
    if m := _COUNT.search(clean):
        raw = " ".join(m.group(1).lower().split())
        out["seats"] = int(raw) if raw.isdigit() else _NUMBERS[raw]
    elif m := _COUNT_PEOPLE.search(clean):  # "three of us", "we're four", "just me"
        raw = (m.group(1) or m.group(2) or "one").lower()
        out["seats"] = int(raw) if raw.isdigit() else _NUMBERS.get(raw, 1)
    if m := _COUPON.search(clean):
        out["coupon"] = m.group(1)
    changes = any(k in out for k in ("seats", "showtime"))
    if _CANCEL.search(clean) and not changes:
        out["cancel"] = True
    return out


@dataclass(frozen=True)
class _Candidate:
    name: str
    start: int
    end: int
    strength: int


def _name(text: str, *, asked: Topic | None, has_email: bool, titles: Collection[str],
          local: Collection[str] = ()) -> str | None:
    """The name ``text`` gives (``text`` has its addresses replaced by ``<EMAIL>``; ``local``: the
    words of the addresses before the @, which a name in lower case next to one must share)."""
    banned = {w.lower() for t in titles for w in re.findall(r"[^\W\d_]+", t)}
    answering = asked in ("contact", "name")
    found: list[_Candidate] = []
    for cue, strength, lower_ok in _CUES:
        for m in cue.finditer(text):
            got = _name_at(text, m.end(), lower_ok=lower_ok, banned=banned)
            if got is None:
                continue
            name, end = got
            if strength == 2 and (_WHEN_AFTER.match(text[end:]) or not (answering or has_email)):
                continue  # "for Dune tonight": a movie; without a contact question or an address: not a name
            found.append(_Candidate(name, m.end(), end, strength))
    covered = 0
    for m in re.finditer(r"(?:^|(?<=[\s,;:!?()<>\[\]/|\"\u201c\u201d\u2013\u2014]))([^\W\d_])", text):
        if m.start(1) < covered:
            continue  # inside the name found just before ("Lopez" of "Maria Lopez")
        start = m.start(1)
        got = _name_at(text, start, lower_ok=False, banned=banned)
        if got is None and local:  # "ada lovelace, ada@example.com": lower case, but it is the address's
            got = _name_at(text, start, lower_ok=True, banned=banned)
            if got is not None and not (got[0].islower() and set(got[0].split()) & set(local)
                                        and _next_to_email(text, start, got[1])):
                got = None
        if got is None:
            continue
        name, end = got
        covered = end
        if _NAME_BEFORE_CUE.match(text[end:]):
            found.append(_Candidate(name, start, end, 3))
        elif (answering and (_alone(text, start, end) or _leads(text, start, end, name))) or (
                (answering or has_email) and _next_to_email(text, start, end)):
            found.append(_Candidate(name, start, end, 1))
    if not found:
        return None
    best = max(c.strength for c in found)
    top = [c for c in found if c.strength == best]
    near = [c for c in top if _next_to_email(text, c.start, c.end)]
    name = (near or top)[-1].name
    return name.title() if name.islower() else name  # "dana smith" -> "Dana Smith"


def _name_at(text: str, pos: int, *, lower_ok: bool, banned: set[str]) -> tuple[str, int] | None:
    """The name starting at ``pos`` (one to four name-like words), and where it ends."""
    words: list[str] = []
    end = pos
    for m in _TOKEN.finditer(text, pos):
        if text[end:m.start()].strip():
            break
        word = m.group(0)
        stop = word.endswith(".") and len(word) > 2
        word = word.rstrip(".")
        lowered = word.lower()
        if not word or not word[0].isalpha() or lowered in _NOT_NAMES or lowered in banned:
            break
        if not word[0].isupper() and not (lower_ok or (words and lowered in _PARTICLES)):
            break
        if not re.fullmatch(r"[^\W\d_]+(?:['-][^\W\d_]+)*", word):
            break
        words.append(word)
        end = m.start() + len(word)
        if stop or len(words) == 4:
            break
    while words and words[-1].lower() in _PARTICLES:
        words.pop()
    if not words:
        return None
    return " ".join(words), end


def _leads(text: str, start: int, end: int, name: str) -> bool:
    """Whether a name of two words or more opens the answer, set off by punctuation ("Alan Turing,
    but I'd rather not give my e-mail")."""
    if start > 60:
        return False
    before = re.findall(r"[^\W\d_]+", text[:start].lower())
    return len(name.split()) >= 2 and all(w in _FILLERS for w in before) and bool(
        re.match(r"\s*(?:[,.;!]|$)", text[end:]))


def _alone(text: str, start: int, end: int) -> bool:
    """Whether the name is all its line says (fillers and an address aside): "Zoe Miller", "Lucy Hale please"."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    if (line_end if line_end >= 0 else len(text)) - line_start > 200:
        return False  # a long line is not a name on its own
    rest = (text[line_start:start] + " " + text[end:line_end if line_end >= 0 else len(text)])
    words = re.findall(r"[^\W\d_]+|<EMAIL>", rest.lower())
    return all(w in _CONNECTORS or w in _FILLERS or w in ("<email>", "name", "this") for w in words)


def _next_to_email(text: str, start: int, end: int) -> bool:
    """Whether only punctuation and connecting words stand between the name and an address."""
    after = text.find("<EMAIL>", end)
    before = text.rfind("<EMAIL>", 0, start)
    for between in (text[end:after] if after >= 0 else None,
                    text[before + len("<EMAIL>"):start] if before >= 0 else None):
        if between is None or len(between) > 80:
            continue
        words = re.findall(r"[^\W\d_]+(?:-[^\W\d_]+)?", between.lower())
        if len(words) <= 6 and all(w in _CONNECTORS for w in words):
            return True
    return False


def understand(goal: str, turns: Sequence[Turn], *, contact: Contact | None = None,
               titles: Collection[str] = ()) -> Understanding:
    """The goal and the person's messages (oldest first) read together; a later message wins."""
    state: dict[str, Any] = {"name": contact.name, "email": contact.email} if contact is not None else {}
    unhelpful: list[str] = []
    guess: str | None = None
    reading = read(goal, titles=titles)
    previous: Topic | None = None
    for index in range(len(turns) + 1):
        if index > 0:
            turn = turns[index - 1]
            topic = topic_of(turn.question)
            incomplete = not (state.get("name") and state.get("email"))
            if topic is None and incomplete and (turn.question is not None or previous in ("contact", "name", "email")):
                # A question in other words, or a second message going on with an answer about the
                # contact ("maria@example.com", then "Maria Lopez"), while the contact is incomplete.
                topic = "contact"
            reading = read(turn.text, asked=topic, titles=titles)
            previous = topic
        asked = index > 0 and turns[index - 1].question is not None
        if reading.confirms and guess is not None and reading.email is None:
            reading = reading.model_copy(update={"email": guess, "usable": True})
        for key in ("name", "email", "date", "coupon"):
            if getattr(reading, key) is not None:
                state[key] = getattr(reading, key)
        if reading.seats is not None:
            state["count"] = reading.seats
        _fold_showtime(state, reading, index)
        if reading.cancel:
            state["cancel"] = True
        elif reading.seats is not None or reading.showtime is not None:
            state["cancel"] = False  # a change after calling it off: the booking is on again
        if asked and not reading.usable:
            unhelpful.append(turns[index - 1].text)
            guess = reading.guess
        elif asked or reading.usable:
            unhelpful, guess = [], None
    return Understanding(**state, unhelpful=tuple(unhelpful), guess=guess, last=reading if turns else None)


def _fold_showtime(state: dict[str, Any], reading: Reading, index: int) -> None:
    """A later time, part of the day or direction replaces what an earlier message said about it."""
    said_time = reading.showtime not in (None, "later", "earlier")
    if reading.relative is not None:
        state.update(relative=reading.relative, relative_turn=index, day_part=reading.day_part,
                     time=reading.showtime if said_time else None, approximate=reading.approximate)
        return
    if said_time:
        state.update(time=reading.showtime, approximate=reading.approximate, relative=None, relative_turn=None)
        if reading.day_part is not None or index > 0:
            state["day_part"] = reading.day_part
    elif reading.day_part is not None:
        state["day_part"] = reading.day_part
        if index > 0:
            state.update(time=None, relative=None, relative_turn=None)
