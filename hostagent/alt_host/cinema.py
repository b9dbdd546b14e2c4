"""The "Lumière" picture house behind the alternative host: films, screenings, a seat grid and the
basket, each screen in this host's own ``uiSpec`` dialect (nested ``components``/``children``/
``sections``, ``name`` instead of ``title``, ISO ``startsAt``, a grid of status words).

Written from the tool list of docs/host-protocol.md: the same tools and stages, its own world.
"""

from __future__ import annotations

import datetime
import itertools
import re
from dataclasses import dataclass, field
from typing import Any

from jsonschema import Draft202012Validator

from hostagent.hosting import Refusal

FILMS = {  # id -> (name, certificate, runtime)
    "film-dune2": ("Dune: Part Two", "12A", "2h 46m"),
    "film-io2": ("Inside Out 2", "U", "1h 36m"),
    "film-opp": ("Oppenheimer", "15", "3h 00m"),
    "film-pad": ("Paddington in Peru", "PG", "1h 46m"),
}
DAYS = ("2026-07-01", "2026-07-02")
STARTS = ("13:15", "18:00", "21:00")
ROW_LABELS = "ABCDEF"
PER_ROW = 10
SOLD = frozenset({"A5", "A6", "C5", "C6", "D9", "F1", "F2"})
PROMOS = {"SAVE10": 10, "STUDENT15": 15}
PENCE = (950, 1150, 1300)

_OBJ = "object"
TOOL_LIST: dict[str, dict[str, Any]] = {
    "search_movies": {"description": "Find films whose name contains the words of `query`; `date` limits the "
                                     "screenings to one day (YYYY-MM-DD).",
                      "params": {"type": _OBJ, "properties": {"query": {"type": "string", "maxLength": 80},
                                                              "date": {"type": "string", "format": "date"}},
                                 "additionalProperties": False}},
    "select_movie": {"description": "Show the screenings of a film.",
                     "params": {"type": _OBJ, "properties": {"movieId": {"type": "string"}}, "required": ["movieId"],
                                "additionalProperties": False}},
    "select_showtime": {"description": "Pick a screening; opens the seat grid.",
                        "params": {"type": _OBJ, "properties": {"showtimeId": {"type": "string"}},
                                   "required": ["showtimeId"], "additionalProperties": False}},
    "go_back": {"description": "One screen back.", "params": {"type": _OBJ, "additionalProperties": False}},
    "select_seats": {"description": "Hold these places (row letter + number, e.g. D4) and open the basket.",
                     "params": {"type": _OBJ, "properties": {"seatIds": {"type": "array", "minItems": 1, "maxItems": 6,
                                                                        "items": {"type": "string"}}},
                                "required": ["seatIds"], "additionalProperties": False}},
    "enter_contact": {"description": "Who the tickets are for.",
                      "params": {"type": _OBJ, "properties": {"name": {"type": "string", "minLength": 2},
                                                              "email": {"type": "string", "minLength": 5}},
                                 "required": ["name", "email"], "additionalProperties": False}},
    "apply_coupon": {"description": "Redeem a promo code.",
                     "params": {"type": _OBJ, "properties": {"code": {"type": "string", "minLength": 3}},
                                "required": ["code"], "additionalProperties": False}},
    "confirm_booking": {"description": "Pay and issue the tickets.",
                        "params": {"type": _OBJ, "additionalProperties": False}},
}
TOOLS_BY_STAGE = {
    "browse": ["search_movies", "select_movie"],
    "showtimes": ["select_showtime", "go_back"],
    "seats": ["select_seats", "go_back"],
    "checkout": ["enter_contact", "apply_coupon", "confirm_booking"],
    "confirmation": [],
}
_references = itertools.count(7001)


def screening_id(film: str, day: str, start: str) -> str:
    return f"scr:{film.removeprefix('film-')}:{day.replace('-', '')}T{start.replace(':', '')}"


def _label(day: str, start: str) -> str:
    weekday = datetime.date.fromisoformat(day).strftime("%a %d %b")
    return f"{weekday}, {start}"


@dataclass
class Visit:
    """One customer's way through the picture house (the app's state)."""

    hide_listing: bool = False
    stage: str = "browse"
    words: str = ""
    day: str | None = None
    film: str | None = None
    screening: str | None = None
    places: list[str] = field(default_factory=list)
    buyer: tuple[str, str] | None = None
    promo: str | None = None
    reference: str | None = None
    searched: bool = False

    def tools(self) -> list[dict[str, Any]]:
        return [{"name": name, **TOOL_LIST[name]} for name in TOOLS_BY_STAGE[self.stage]]

    # screens (the uiSpec dialect) --------------------------------------------------------------
    def screen(self) -> dict[str, Any]:
        return getattr(self, f"_screen_{self.stage}")()  # type: ignore[no-any-return]

    def _film_ref(self) -> dict[str, Any]:
        assert self.film is not None
        return {"id": self.film, "name": FILMS[self.film][0]}

    def _screening_ref(self) -> dict[str, Any]:
        assert self.screening is not None
        _, day, start = self._parts(self.screening)
        return {"id": self.screening, "label": _label(day, start), "startsAt": f"{day}T{start}"}

    @staticmethod
    def _parts(sid: str) -> tuple[str, str, str]:
        m = re.fullmatch(r"scr:(\w+):(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})", sid)
        assert m is not None
        return f"film-{m.group(1)}", f"{m.group(2)}-{m.group(3)}-{m.group(4)}", f"{m.group(5)}:{m.group(6)}"

    def _screen_browse(self) -> dict[str, Any]:
        parts: list[dict[str, Any]] = [{"type": "heading", "text": "What's on at the Lumière"}]
        if self.hide_listing and not self.searched:
            parts.append({"type": "hint", "text": "Type a film name in the search to see what's on."})
        else:
            cards = [{"type": "card", "id": fid, "name": name, "certificate": cert, "runtime": runtime}
                     for fid, (name, cert, runtime) in FILMS.items()
                     if all(w in name.lower() for w in self.words.lower().split())]
            parts.append({"type": "section", "id": "now-showing", "title": "Now showing", "children": cards})
        parts.append({"type": "filters", "search": self.words, "day": self.day})
        return {"view": "catalogue", "components": parts}

    def _screen_showtimes(self) -> dict[str, Any]:
        assert self.film is not None
        slots = [{"type": "slot", "id": screening_id(self.film, day, start), "label": _label(day, start),
                  "startsAt": f"{day}T{start}", "priceGBP": f"{PENCE[i] / 100:.2f}"}
                 for day in DAYS if self.day in (None, day) for i, start in enumerate(STARTS)]
        return {"view": "screenings", "components": [
            {"type": "film-banner", "film": self._film_ref()},
            {"type": "list", "id": "screenings", "title": "Pick a time", "children": slots}]}

    def _screen_seats(self) -> dict[str, Any]:
        grid = [["sold" if f"{row}{n}" in SOLD else "free" for n in range(1, PER_ROW + 1)] for row in ROW_LABELS]
        return {"view": "seat-picker", "components": [
            {"type": "summary", "film": self._film_ref(), "screening": self._screening_ref()},
            {"type": "seatmap", "screenAt": "top", "rowLabels": list(ROW_LABELS), "grid": grid}],
            "limits": {"maxTickets": 6}}

    def _basket(self) -> dict[str, Any]:
        return {"type": "summary", "film": self._film_ref(), "screening": self._screening_ref(),
                "places": list(self.places), "promo": self.promo, "amountDue": f"£{self.due() / 100:.2f}"}

    def _screen_checkout(self) -> dict[str, Any]:
        name, email = self.buyer or (None, None)
        return {"view": "basket", "sections": [self._basket(), {"type": "form", "id": "buyer", "fields": [
            {"name": "name", "label": "Full name", "value": name, "required": True},
            {"name": "email", "label": "E-mail", "value": email, "required": True}]}]}

    def _screen_confirmation(self) -> dict[str, Any]:
        return {"view": "receipt", "components": [{"type": "confirmation", "reference": self.reference,
                                                   "details": self._basket()}]}

    def due(self) -> int:
        if self.screening is None:
            return 0
        _, _, start = self._parts(self.screening)
        pence = PENCE[STARTS.index(start)] * len(self.places)
        return pence * (100 - PROMOS.get(self.promo or "", 0)) // 100

    def receipt(self) -> str:
        if self.reference is None:
            return f"nothing booked (stopped on the {self.stage} screen)"
        assert self.film is not None and self.buyer is not None
        return (f"{self.reference}: {FILMS[self.film][0]}, {self._screening_ref()['label']}, "
                f"places {' '.join(self.places)} for {self.buyer[0]}, £{self.due() / 100:.2f}")

    # tools -------------------------------------------------------------------------------------
    def run(self, name: str, params: dict[str, Any]) -> dict[str, Any]:
        if name not in TOOLS_BY_STAGE[self.stage]:
            raise Refusal("UNKNOWN_TOOL", f"there is no {name!r} on the {self.stage} screen")
        errors = sorted(e.message for e in Draft202012Validator(TOOL_LIST[name]["params"]).iter_errors(params))
        if errors:
            raise Refusal("INVALID_PARAMS", f"{name} does not take these parameters: {'; '.join(errors)}")
        result: dict[str, Any] = getattr(self, f"_do_{name}")(params)
        return result

    def _do_search_movies(self, p: dict[str, Any]) -> dict[str, Any]:
        day = p.get("date")
        if day is not None and day not in DAYS:
            raise Refusal("INVALID_PARAMS", f"no programme published for {day}")
        self.words, self.day, self.searched = str(p.get("query", "")).strip(), day, True
        words = self.words.lower().split()
        return {"matches": sum(1 for n, *_ in FILMS.values() if all(w in n.lower() for w in words))}

    def _do_select_movie(self, p: dict[str, Any]) -> dict[str, Any]:
        if p["movieId"] not in FILMS:
            raise Refusal("INVALID_PARAMS", f"unknown film {p['movieId']}")
        self.film, self.stage = p["movieId"], "showtimes"
        return {"film": FILMS[self.film][0]}

    def _do_select_showtime(self, p: dict[str, Any]) -> dict[str, Any]:
        sid = p["showtimeId"]
        valid = {screening_id(self.film or "", d, s) for d in DAYS for s in STARTS}
        if sid not in valid:
            raise Refusal("INVALID_PARAMS", f"{sid} is not a screening of this film")
        self.screening, self.stage = sid, "seats"
        return {"screening": sid}

    def _do_go_back(self, p: dict[str, Any]) -> dict[str, Any]:
        if self.stage == "showtimes":
            self.stage, self.film = "browse", None
        else:
            self.stage, self.screening, self.places = "showtimes", None, []
        return {"now": self.stage}

    def _do_select_seats(self, p: dict[str, Any]) -> dict[str, Any]:
        wanted = list(p["seatIds"])
        bad = [s for s in wanted if not re.fullmatch(rf"[{ROW_LABELS}]([1-9]|10)", s)]
        if bad or len(set(wanted)) != len(wanted):
            raise Refusal("INVALID_PARAMS", f"not places of this auditorium: {', '.join(bad) or 'duplicates'}")
        sold = [s for s in wanted if s in SOLD]
        if sold:
            raise Refusal("INVALID_PARAMS", f"already sold: {', '.join(sold)}")
        self.places, self.stage = wanted, "checkout"
        return {"held": wanted}

    def _do_enter_contact(self, p: dict[str, Any]) -> dict[str, Any]:
        if "@" not in p["email"]:
            raise Refusal("INVALID_PARAMS", "the e-mail address needs an @")
        self.buyer = (p["name"].strip(), p["email"].strip())
        return {"buyer": self.buyer[0]}

    def _do_apply_coupon(self, p: dict[str, Any]) -> dict[str, Any]:
        code = p["code"].strip().upper()
        if code not in PROMOS:
            raise Refusal("INVALID_PARAMS", f"promo code {p['code']} is not valid")
        self.promo = code
        return {"promo": code, "amountDue": self.due()}

    def _do_confirm_booking(self, p: dict[str, Any]) -> dict[str, Any]:
        if self.buyer is None:
            raise Refusal("TOOL_EXECUTION_FAILED", "payment refused: who are the tickets for?")
        self.reference = f"LUM-{next(_references)}"
        self.stage = "confirmation"
        return {"reference": self.reference}
