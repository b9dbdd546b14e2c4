"""The reference host's fixed world: movies, showtimes, seats, coupons, and each stage's tools.

Deterministic on purpose: tests and the demo see the same cinema every time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

STAGES = ("browse", "showtimes", "seats", "checkout", "confirmation")


@dataclass(frozen=True)
class Movie:
    id: str
    title: str
    genre: str
    minutes: int


@dataclass(frozen=True)
class Showtime:
    id: str
    movie_id: str
    date: str
    time: str
    hall: str
    price_cents: int


MOVIES: tuple[Movie, ...] = (
    Movie("m1", "Dune: Part Two", "sci-fi", 166),
    Movie("m2", "Inside Out 2", "animation", 96),
    Movie("m3", "Oppenheimer", "drama", 180),
    Movie("m4", "The Wild Robot", "animation", 102),
)
DATES = ("2026-07-01", "2026-07-02")
TIMES = ("14:00", "17:30", "20:30")
ROWS = "ABCDE"
SEATS_PER_ROW = 8
# Taken in every showtime: the seat map is not all free, so seat choice matters.
TAKEN = frozenset({"A1", "A2", "B4", "B5", "C3", "C4", "D1"})
COUPONS = {"SAVE10": 10, "FAMILY20": 20}  # code -> percent off
MAX_SEATS = 8


def showtimes_of(movie_id: str) -> list[Showtime]:
    out = []
    for d, date in enumerate(DATES):
        for t, time in enumerate(TIMES):
            out.append(Showtime(id=f"st-{movie_id}-{date[5:7]}{date[8:]}-{time.replace(':', '')}", movie_id=movie_id,
                                date=date, time=time, hall=f"Hall {1 + (d + t) % 3}", price_cents=1250 + 150 * t))
    return out


SHOWTIMES: dict[str, Showtime] = {s.id: s for m in MOVIES for s in showtimes_of(m.id)}
MOVIES_BY_ID: dict[str, Movie] = {m.id: m for m in MOVIES}

_NO_PARAMS: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}
_DATE = {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"}

TOOLS: dict[str, dict[str, Any]] = {
    "search_movies": {
        "description": "Filter the movie list by a text query and/or a date (YYYY-MM-DD).",
        "params": {"type": "object", "properties": {"query": {"type": "string", "maxLength": 100}, "date": _DATE},
                   "additionalProperties": False}},
    "select_movie": {
        "description": "Open the showtimes of one movie.",
        "params": {"type": "object", "properties": {"movieId": {"type": "string", "minLength": 1}},
                   "required": ["movieId"], "additionalProperties": False}},
    "select_showtime": {
        "description": "Choose a showtime and open its seat map.",
        "params": {"type": "object", "properties": {"showtimeId": {"type": "string", "minLength": 1}},
                   "required": ["showtimeId"], "additionalProperties": False}},
    "go_back": {"description": "Return to the previous screen.", "params": _NO_PARAMS},
    "select_seats": {
        "description": "Choose the seats (ids like C5) and go to checkout.",
        "params": {"type": "object", "properties": {"seatIds": {
            "type": "array", "items": {"type": "string", "pattern": "^[A-Z][0-9]{1,2}$"}, "minItems": 1,
            "maxItems": MAX_SEATS, "uniqueItems": True}}, "required": ["seatIds"], "additionalProperties": False}},
    "enter_contact": {
        "description": "Set the name and email the booking is made for.",
        "params": {"type": "object", "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 100},
            "email": {"type": "string", "pattern": "^[^@\\s]+@[^@\\s]+\\.[^@\\s]+$", "maxLength": 200}},
            "required": ["name", "email"], "additionalProperties": False}},
    "apply_coupon": {
        "description": "Apply a discount code (upper-case letters and digits).",
        "params": {"type": "object", "properties": {"code": {"type": "string", "pattern": "^[A-Z0-9]{3,16}$"}},
                   "required": ["code"], "additionalProperties": False}},
    "confirm_booking": {"description": "Book the selected seats (needs the contact details).", "params": _NO_PARAMS},
}

STAGE_TOOLS: dict[str, tuple[str, ...]] = {
    "browse": ("search_movies", "select_movie"),
    "showtimes": ("select_showtime", "go_back"),
    "seats": ("select_seats", "go_back"),
    "checkout": ("enter_contact", "apply_coupon", "confirm_booking"),
    "confirmation": (),
}


def tool_schema(stage: str) -> list[dict[str, Any]]:
    """The toolSchema of ``stage``: exactly its tools."""
    return [{"name": name, **TOOLS[name]} for name in STAGE_TOOLS[stage]]
