"""The rule-based baseline planner (seed 002 §9 Phase 1): one rule set per stage of the reference
movie-booking flow, no model, works offline.

It reads the movie, date, time, seat count, contact and coupon from the goal and the user's later
messages (``hostagent.understanding``; a later message wins: the user may change their mind
mid-flow, "the later show", "make it three seats", and the planner then navigates back with
``go_back`` where the host offers it; "cancel that" stops before anything is booked). It announces
its interpretation before acting, asks when it lacks the contact details (an answer it cannot use
gets a clarifying question that quotes it and what was understood, never the same question again),
and gives up with a ``blocked`` message when the goal cannot be met on the screens the host shows
(no such movie, no matching showtime, not enough free seats, a changed booking at checkout where
there is no way back).
"""

from __future__ import annotations

import re
from typing import Any

from hostagent.memory import AgentMemory
from hostagent.perception import EMAIL, PerceivedContext, signals
from hostagent.plans import NavigationPlan, PlannedAction
from hostagent.policies.retry import adjust_params
from hostagent.protocol import new_id
from hostagent.screen import ScreenView, Seat, Showtime
from hostagent.tool_choice import contact_params, find_search_tool, single_param
from hostagent.understanding import Understanding, topic_of

FLOW = ("browse", "showtimes", "seats", "checkout", "confirmation")
_ROW_PREFERENCE = "CDBEAFGHIJ"
MAX_QUESTIONS = 2
COUPON_ATTEMPTS = 2  # the first attempt and the adjusted retry
APPROX_MINUTES = 90  # "around 8pm": a showtime at most this far from it
CONTACT_QUESTION = "Which name and email should the booking be made for?"
EXAMPLE = "Ada Lovelace, ada@example.com"
Anchor = tuple[str | None, str]


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9]+", " ", text.lower()).split())


def _tool(name: str, params: dict[str, Any], reason: str, expected: str | None) -> PlannedAction:
    return PlannedAction(type="tool.call", reason=reason, payload={"name": name, "params": params},
                         expectedStage=expected)


def _say(text: str, kind: str, reason: str) -> PlannedAction:
    return PlannedAction(type="agent.message", reason=reason, payload={"text": text, "kind": kind})


class RulesPlanner:
    name = "rules"

    async def plan(self, context: PerceivedContext, memory: AgentMemory) -> NavigationPlan:
        action, confidence = self._next(context, memory)
        tool = context.tool(action.tool) if action.tool else None
        if tool is not None:
            # Words become params: fit them to the tool's schema (case, whitespace, types).
            action = action.model_copy(update={"payload": {"name": tool.name,
                                                           "params": adjust_params(tool, action.params)}})
        stage = context.stage
        later = list(FLOW[FLOW.index(stage) + 1:]) if stage in FLOW else []
        return NavigationPlan(planId=new_id("plan"), planner=self.name, goal=_goal_text(context),
                              currentStage=stage, remainingSteps=later, nextAction=action, confidence=confidence)

    # ---------------------------------------------------------------------------------------------
    def _next(self, ctx: PerceivedContext, memory: AgentMemory) -> tuple[PlannedAction, float]:
        notes = memory.working.notes
        movies = _known_movies(memory, ctx)
        movie = _desired_movie([ctx.goal, *ctx.userTexts], movies)
        sig = ctx.signals
        if sig.cancel and ctx.stage != "confirmation":
            if not notes.get("cancel_told"):
                notes["cancel_told"] = True
                return _say("Understood, I have stopped: nothing was booked.", "info",
                            "the user called the booking off before it was made"), 1.0
            return PlannedAction(type="session.end", reason="the user called the booking off; nothing was booked",
                                 payload={"reason": "the user called the booking off; nothing was booked"}), 1.0
        heard = 1 + len(ctx.userTexts)
        if notes.get("announced", 0) < heard:
            # Say how the goal (or the user's change of mind) was understood before acting on it.
            first = "announced" not in notes
            notes["announced"] = heard
            if first or _desired_movie(ctx.userTexts[-1:], movies) or _signals_changed(ctx):
                text = _intent_text(movie, sig, title_guess([ctx.goal, *ctx.userTexts]))
                return _say(text if first else f"Understood, changing the plan. {text}", "info",
                            "announce how the goal was understood before acting"), 0.9
        stage = ctx.stage
        view = ctx.screen
        if stage == "browse":
            return self._browse(ctx, memory, movie, movies, sig)
        anchor = _anchor(ctx, memory)
        if stage == "showtimes":
            return self._showtimes(ctx, memory, movie, sig, anchor)
        if stage == "seats":
            return self._seats(ctx, movie, sig, anchor)
        if stage == "checkout":
            return self._checkout(ctx, memory, movie, sig, anchor)
        if stage == "confirmation":
            if not notes.get("reported"):
                notes["reported"] = True
                return _say(_done_text(view, notes, cancelled=sig.cancel), "info",
                            "tell the user the booking is confirmed"), 1.0
            return PlannedAction(type="session.end", reason=f"goal reached: booking {view.bookingId} confirmed",
                                 payload={"reason": f"goal reached: booking {view.bookingId} confirmed"}), 1.0
        return _say(f"I cannot work with the screen {stage!r}: it is not part of the booking flow I know.",
                    "blocked", f"stage {stage!r} is unknown to the rules planner"), 0.2

    def _search(self, ctx: PerceivedContext, memory: AgentMemory, query: str, date: str | None,
                why: str) -> PlannedAction | None:
        """A call of the toolSchema's search tool (chosen by its schema), once per query."""
        search = find_search_tool(ctx.toolSchema)
        if search is None:
            return None
        notes = memory.working.notes
        key = [search.tool.name, query, date if search.date_param else None]
        if key in notes.setdefault("searches", []):
            return None
        notes["searches"].append(key)
        return _tool(search.tool.name, search.params(query, date), why, ctx.stage)

    def _browse(self, ctx: PerceivedContext, memory: AgentMemory, movie: tuple[str, str] | None,
                movies: dict[str, str], sig: Understanding) -> tuple[PlannedAction, float]:
        notes = memory.working.notes
        if movie is None:
            guess = title_guess([ctx.goal, *ctx.userTexts])
            answer = short_answer(ctx.userTexts[-1]) if notes.get("asked_movie") and ctx.userTexts else None
            guess = answer or guess  # the user answered which movie: their words
            if guess is not None:
                shown = "the screen lists no movies" if not ctx.screen.movies else "the list does not show it"
                found = self._search(ctx, memory, guess, sig.date,
                                     f"the goal names {guess!r} and {shown}: search for it with the search tool")
                if found is not None:
                    return found, 0.7
            offer = ", ".join(sorted(movies.values()))
            question = "Which movie would you like to see?" + (f" On offer: {offer}." if offer else "")
            if answer is not None:  # never the same question again: say what was not found
                question = f'I could not find "{answer}" here. {question}'
            notes["asked_movie"] = True
            return self._ask_or_block(memory, question, "the goal names no movie this cinema shows"), 0.3
        movie_id, title = movie
        query = title.split(":")[0]
        listed = {m.id for m in ctx.screen.movies}
        if sig.date:
            found = self._search(ctx, memory, query, sig.date,
                                 f"narrow the list to {title} on {sig.date}, the date the user asked for")
            if found is not None:
                return found, 0.9
        if movie_id in listed:
            tool = ctx.tool("select_movie")
            return _tool("select_movie", {single_param(tool, "movieId"): movie_id},
                         f"open the showtimes of {title}, the movie the user asked for", "showtimes"), 0.9
        found = self._search(ctx, memory, query, None, f"{title} is not in the current list; search for it")
        if found is not None:
            return found, 0.7
        return _say(f"I could not find {title} in the listing, so I cannot book it.", "blocked",
                    f"{title} is not listed even after searching"), 0.5

    def _showtimes(self, ctx: PerceivedContext, memory: AgentMemory, movie: tuple[str, str] | None,
                   sig: Understanding, anchor: Anchor | None) -> tuple[PlannedAction, float]:
        view = ctx.screen
        shown = view.movie
        if movie is not None and shown is not None and shown.id != movie[0]:
            return _tool("go_back", {}, f"the user now wants {movie[1]}, this screen shows {shown.title}",
                         "browse"), 0.9
        title = shown.title if shown is not None else (movie[1] if movie else "this movie")
        options = showtime_options(view.showtimes, sig, anchor)
        if not options:
            available = ", ".join(s.label for s in view.showtimes) or "none"
            return _say(f"No showtime of {title} matches {_when(sig, anchor)}. Available: {available}.",
                        "blocked", "no showtime matches the requested date and time"), 0.6
        pick = options[0]
        memory.working.notes["chosen"] = [pick.date, pick.time] if pick.time else None
        tool = ctx.tool("select_showtime")
        return _tool("select_showtime", {single_param(tool, "showtimeId"): pick.id},
                     f"{pick.label} is the {'best' if sig.relative or sig.approximate else 'first'} showtime "
                     f"matching {_when(sig, anchor)}", "seats"), 0.9

    def _seats(self, ctx: PerceivedContext, movie: tuple[str, str] | None,
               sig: Understanding, anchor: Anchor | None) -> tuple[PlannedAction, float]:
        view = ctx.screen
        shown_movie, show = view.movie, view.showtime
        if movie is not None and shown_movie is not None and shown_movie.id != movie[0]:
            return _tool("go_back", {}, f"the user now wants {movie[1]}, these seats are for "
                         f"{shown_movie.title}", "showtimes"), 0.9
        if show is not None and not _showtime_fits(show, sig, anchor):
            return _tool("go_back", {}, f"the selected showtime {show.label} no longer "
                         f"matches {_when(sig, anchor)}", "showtimes"), 0.9
        count = sig.count or 1
        seats = choose_seats(view.seats, count)
        if not seats:
            return _say(f"There are not {count} free seats for this showtime.", "blocked",
                        f"fewer than {count} seats are free"), 0.6
        tool = ctx.tool("select_seats")
        return _tool("select_seats", {single_param(tool, "seatIds"): seats},
                     f"{count} free seat(s) side by side in a central row: {', '.join(seats)}", "checkout"), 0.9

    def _checkout(self, ctx: PerceivedContext, memory: AgentMemory, movie: tuple[str, str] | None,
                  sig: Understanding, anchor: Anchor | None) -> tuple[PlannedAction, float]:
        notes = memory.working.notes
        view = ctx.screen
        shown, show, held = view.movie, view.showtime, view.heldSeats
        if (movie is not None and shown is not None and shown.id != movie[0]) or (
                show is not None and not _showtime_fits(show, sig, anchor)) or (
                sig.count is not None and held and len(held) != sig.count):
            return _say("You changed the booking after I reached checkout, and checkout has no way back: the "
                        f"seats held are for {shown.title if shown else 'another movie'} "
                        f"{show.label if show else ''} ({len(held)} seats). I have not booked anything.",
                        "blocked", "the checkout no longer matches the user's request and offers no go_back"), 0.8
        contact = view.contact
        if sig.name and sig.email and (contact is None or contact.name != sig.name or contact.email != sig.email):
            return _tool("enter_contact", contact_params(ctx.tool("enter_contact"), sig.name, sig.email),
                         f"the booking must be made for {sig.name}", "checkout"), 0.9
        if contact is None or not (contact.name or contact.email):
            return self._ask_contact(ctx, memory), 0.5
        coupon = sig.coupon
        if coupon and view.coupon not in (coupon, coupon.upper()) and not notes.get("coupon_dropped"):
            tries = len(memory.episodic.tool_failures("apply_coupon"))
            if tries < COUPON_ATTEMPTS:
                tool = ctx.tool("apply_coupon")
                return _tool("apply_coupon", {single_param(tool, "code"): coupon},
                             f"the user gave the coupon {coupon}", "checkout"), 0.8
            notes["coupon_dropped"] = coupon
        return _tool("confirm_booking", {}, "seats, showtime and contact match the request: book it",
                     "confirmation"), 0.9

    def _ask_contact(self, ctx: PerceivedContext, memory: AgentMemory) -> PlannedAction:
        """The contact question; after an answer it could not use, a clarifying question quoting the
        answer and what was understood (never the same question twice in a row). The loop stops the
        session after ``AgentConfig.max_unhelpful_answers`` such answers in a row."""
        sig = ctx.signals
        turns = memory.working.turns
        answered = bool(turns) and topic_of(turns[-1].question) in ("contact", "name", "email")
        missing = " and ".join(w for w, v in (("name", sig.name), ("e-mail address", sig.email)) if not v)
        if sig.unhelpful and answered:
            answer = sig.unhelpful[-1][:200]
            if sig.guess:
                text = (f'Did you mean {sig.guess}? I could not take an e-mail address from "{answer}" as written: '
                        f"please type it with the @, or say yes if {sig.guess} is right.")
            elif len(sig.unhelpful) == 1:
                text = (f'Sorry, I could not find a name or an e-mail address in "{answer}". So far I have '
                        f"{sig.known_contact()}. Which {missing} should the booking be made for? "
                        f"For example: {EXAMPLE}.")
            else:
                text = (f'I still have no usable {missing}: "{answer}" did not give one (so far I have '
                        f"{sig.known_contact()}). Please type the {missing}, for example {EXAMPLE}. If I cannot use "
                        "the next answer either, I will stop without booking.")
            why = "the last answer gave no usable contact details"
        elif sig.name or sig.email:
            text = f"Thanks, I have {sig.known_contact()}. Which {missing} should I use?"
            why = f"the {missing} is still missing"
        else:
            text, why = CONTACT_QUESTION, "the contact details are missing"
        if memory.working.questions and memory.working.questions[-1] == text:
            text = f"I still need the {missing} for the booking ({sig.known_contact()} so far). Which {missing}?"
        return _say(text, "question", why)

    def _ask_or_block(self, memory: AgentMemory, question: str, why: str) -> PlannedAction:
        notes = memory.working.notes
        asked = int(notes.get("questions", 0))
        if asked >= MAX_QUESTIONS:
            return _say(f"I cannot go on: {why}, and my questions did not settle it.", "blocked", why)
        notes["questions"] = asked + 1
        return _say(question, "question", why)


def _signals_changed(ctx: PerceivedContext) -> bool:
    """Whether the user's last message changed what to book (not just who it is for)."""
    before = signals([ctx.goal, *ctx.userTexts[:-1]])
    keys = {"date", "time", "day_part", "count", "coupon", "relative", "approximate", "cancel"}
    return before.model_dump(include=keys) != ctx.signals.model_dump(include=keys)


def _goal_text(ctx: PerceivedContext) -> str:
    return " / then: ".join([ctx.goal, *ctx.userTexts])


def _known_movies(memory: AgentMemory, ctx: PerceivedContext) -> dict[str, str]:
    """Movie id -> title, from every screen seen (the list is filtered after a search)."""
    known: dict[str, str] = memory.working.notes.setdefault("movies", {})
    for item in [*ctx.screen.movies, *([ctx.screen.movie] if ctx.screen.movie else [])]:
        known[item.id] = item.title
    return known


_TITLE_AFTER = re.compile(r"\b(?:for|see|watch|of)\s+(?:the\s+(?:movie|film)\s+)?(.+?)(?=\s+(?:on|at|in|this|"
                          r"tomorrow|tonight|today|for|with|under|and|name|email|coupon|instead|please|then|now|too)"
                          r"\b|[,.;!?]|$)", re.IGNORECASE)
_NOT_TITLES = re.compile(r"^(?:\d+|one|two|three|four|five|six|seven|eight|a|an|me|us|you|it|them|my|our)"
                         r"(?:\s+(?:people|persons|adults|kids|children|of us|seats?|tickets?))?$", re.IGNORECASE)


def title_guess(texts: list[str]) -> str | None:
    """The movie the latest text that names one asks for, in the user's words ("seats for Dune on
    ..." -> "Dune"): what a search tool is called with when no listed title matches."""
    for text in reversed(texts):
        cleaned = EMAIL.sub(" ", text)
        for m in _TITLE_AFTER.finditer(cleaned):
            title = " ".join(m.group(1).split())
            if title and not _NOT_TITLES.match(title) and len(title) <= 80:
                return title
    return None


_FILLERS = re.compile(r"\b(?:please|thanks|thank you|i'?d like|i want|i'?ll take|let'?s (?:do|see)|make it|how about|"
                      r"the (?:movie|film)|ok(?:ay)?|yes|sure)\b", re.IGNORECASE)


def short_answer(text: str) -> str | None:
    """A short reply to "which movie?" taken as the title ("Oppenheimer, please" -> "Oppenheimer")."""
    words = " ".join(re.sub(r"[,.;!?]", " ", _FILLERS.sub(" ", text)).split())
    return words if words and len(words.split()) <= 6 and not EMAIL.search(text) else None


def _desired_movie(texts: list[str], movies: dict[str, str]) -> tuple[str, str] | None:
    """The movie the latest text that names one asks for (longest title match wins)."""
    for text in reversed(texts):
        padded = f" {_norm(text)} "
        best: tuple[int, str, str] | None = None
        for movie_id, title in movies.items():
            for candidate in {_norm(title), _norm(title.split(":")[0])}:
                if len(candidate) >= 4 and f" {candidate} " in padded and (best is None or len(candidate) > best[0]):
                    best = (len(candidate), movie_id, title)
        if best is not None:
            return best[1], best[2]
    return None


def _anchor(ctx: PerceivedContext, memory: AgentMemory) -> Anchor | None:
    """The showtime a "later"/"earlier" request is relative to: the one selected when it was heard
    (fixed once, so the new choice is not measured against itself). None: no such request, or nothing
    was selected yet (then the latest / earliest fitting showtime is picked)."""
    sig = ctx.signals
    if sig.relative is None:
        return None
    anchors: dict[str, list[Any]] = memory.working.notes.setdefault("anchors", {})
    key = str(sig.relative_turn)
    if key not in anchors:
        shown = ctx.screen.showtime
        base = [shown.date, shown.time] if shown is not None and shown.time else memory.working.notes.get("chosen")
        if not base:
            return None
        anchors[key] = base
    date, time = anchors[key]
    return date, time


def _minutes(hhmm: str) -> int:
    hours, _, minutes = hhmm.partition(":")
    return int(hours) * 60 + int(minutes or 0)


def _showtime_fits(show: Showtime, sig: Understanding, anchor: Anchor | None = None) -> bool:
    if sig.date and show.date != sig.date:
        return False
    at = _minutes(show.time) if show.time else None
    if anchor is not None:
        day, time = anchor
        if at is None or (not sig.date and day and show.date != day):
            return False
        if (sig.relative == "later" and at <= _minutes(time)) or (sig.relative == "earlier" and at >= _minutes(time)):
            return False
    if sig.time:
        if at is None:
            return False
        if sig.approximate and abs(at - _minutes(sig.time)) > APPROX_MINUTES:
            return False
        if not sig.approximate and show.time != sig.time:
            return False
    if sig.day_part and at is not None:
        return {"morning": at < 12 * 60, "afternoon": 12 * 60 <= at < 18 * 60, "evening": at >= 18 * 60}[sig.day_part]
    return True


def showtime_options(shows: list[Showtime], sig: Understanding, anchor: Anchor | None) -> list[Showtime]:
    """The showtimes that fit, best first: the nearest to an approximate time; the next one after
    (before) the anchor for "later" ("earlier"); without an anchor the latest (earliest); else in the
    host's order."""
    fit = [s for s in shows if _showtime_fits(s, sig, anchor)]

    def when(show: Showtime) -> tuple[str, int]:
        return show.date or "", _minutes(show.time) if show.time else 0

    if sig.time and sig.approximate:
        return sorted(fit, key=lambda s: abs(when(s)[1] - _minutes(sig.time or "0:0")))
    if sig.relative is not None:
        descending = (sig.relative == "earlier") == (anchor is not None)
        return sorted(fit, key=when, reverse=descending)
    return fit


def _when(sig: Understanding, anchor: Anchor | None = None) -> str:
    time = f"around {sig.time}" if sig.time and sig.approximate else sig.time
    parts = [p for p in (sig.date, time, sig.day_part) if p]
    if sig.relative is not None:
        parts.append(f"{sig.relative} than {anchor[1]}" if anchor is not None else f"the {sig.relative} show")
    return " ".join(parts) if parts else "any time"


def choose_seats(seats: list[Seat], count: int) -> list[str]:
    """``count`` free seats side by side, central rows first; any free seats when none are adjacent."""
    rows: dict[str, list[int]] = {}
    for seat in seats:
        m = re.fullmatch(r"([A-Z]{1,2})(\d{1,3})", seat.id)
        if seat.available and m:
            rows.setdefault(m.group(1), []).append(int(m.group(2)))
    order = sorted(rows, key=lambda r: _ROW_PREFERENCE.index(r) if r in _ROW_PREFERENCE else 99)
    for row in order:
        free = sorted(rows[row])
        middle = (free[0] + free[-1]) / 2 if free else 0
        runs = [free[i:i + count] for i in range(len(free) - count + 1)
                if free[i + count - 1] - free[i] == count - 1]
        if runs:
            best = min(runs, key=lambda run: abs((run[0] + run[-1]) / 2 - middle))
            return [f"{row}{n}" for n in best]
    anywhere = [f"{row}{n}" for row in order for n in sorted(rows[row])]
    return anywhere[:count] if len(anywhere) >= count else []


def _intent_text(movie: tuple[str, str] | None, sig: Understanding, guess: str | None) -> str:
    if movie is None:
        return f"I will look for {guess} and book it." if guess else "I will look for the movie you want and book it."
    count = sig.count or 1
    extra = f", coupon {sig.coupon}" if sig.coupon else ""
    who = f" for {sig.name}" if sig.name else ""
    return f"I will book {count} seat{'s' if count != 1 else ''} for {movie[1]} ({_when(sig)}){who}{extra}."


def _done_text(view: ScreenView, notes: dict[str, Any], *, cancelled: bool = False) -> str:
    movie = view.movie.title if view.movie else "your movie"
    show = view.showtime.label if view.showtime else ""
    amount = f"{view.total:.2f}" if isinstance(view.total, float) else view.total  # a number as money: 22.50
    total = f", total {amount}" if amount is not None else ""
    text = f"Booked {view.bookingId}: {movie}, {show}, seats {', '.join(view.heldSeats)}{total}."
    if notes.get("coupon_dropped"):
        text += f" The coupon {notes['coupon_dropped']} was not accepted, so it is not applied."
    if cancelled:  # called off too late: say so rather than pretend
        text += " You asked to cancel, but the booking was already confirmed; I cannot cancel it here."
    return text
