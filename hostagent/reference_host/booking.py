"""The movie-booking app behind the reference host: stages, screens (uiSpec) and tool effects.

Pure state, no protocol: ``Booking.call(tool, params)`` validates the params against the tool's
JSON Schema and applies the tool, raising ``Refusal`` with the protocol error code.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from jsonschema import Draft202012Validator

from hostagent.hosting import Refusal
from hostagent.reference_host.catalog import (
    COUPONS,
    MOVIES,
    MOVIES_BY_ID,
    ROWS,
    SEATS_PER_ROW,
    SHOWTIMES,
    STAGE_TOOLS,
    TAKEN,
    TOOLS,
    showtimes_of,
    tool_schema,
)

_bookings = itertools.count(1001)


@dataclass
class Booking:
    stage: str = "browse"
    query: str = ""
    date: str | None = None
    movie_id: str | None = None
    showtime_id: str | None = None
    seat_ids: list[str] = field(default_factory=list)
    name: str | None = None
    email: str | None = None
    coupon: str | None = None
    booking_id: str | None = None

    # screens ---------------------------------------------------------------------------------
    def tools(self) -> list[dict[str, Any]]:
        return tool_schema(self.stage)

    def ui_spec(self) -> dict[str, Any]:
        if self.stage == "browse":
            return {"screen": "browse", "query": self.query, "date": self.date, "movies": [
                {"id": m.id, "title": m.title, "genre": m.genre, "minutes": m.minutes}
                for m in MOVIES if self._matches(m.title, m.genre)]}
        movie = MOVIES_BY_ID[self.movie_id] if self.movie_id else None
        movie_view = {"id": movie.id, "title": movie.title} if movie else None
        if self.stage == "showtimes":
            assert self.movie_id is not None
            return {"screen": "showtimes", "movie": movie_view, "showtimes": [
                {"id": s.id, "date": s.date, "time": s.time, "hall": s.hall, "price": s.price_cents / 100}
                for s in showtimes_of(self.movie_id) if self.date is None or s.date == self.date]}
        show = self._showtime_view()
        if self.stage == "seats":
            return {"screen": "seats", "movie": movie_view, "showtime": show, "maxSeats": 8, "seats": [
                {"id": f"{row}{n}", "available": f"{row}{n}" not in TAKEN}
                for row in ROWS for n in range(1, SEATS_PER_ROW + 1)]}
        contact = {"name": self.name, "email": self.email} if self.name else None
        view = {"movie": movie_view, "showtime": show, "seats": list(self.seat_ids), "contact": contact,
                "coupon": self.coupon, "total": self.total()}
        if self.stage == "checkout":
            return {"screen": "checkout", **view}
        return {"screen": "confirmation", "bookingId": self.booking_id, **view}

    def _matches(self, title: str, genre: str) -> bool:
        words = self.query.lower().split()
        return all(w in title.lower() or w in genre.lower() for w in words)

    def _showtime_view(self) -> dict[str, Any] | None:
        if self.showtime_id is None:
            return None
        s = SHOWTIMES[self.showtime_id]
        return {"id": s.id, "date": s.date, "time": s.time, "hall": s.hall, "price": s.price_cents / 100}

    def total(self) -> float:
        if self.showtime_id is None:
            return 0.0
        cents = SHOWTIMES[self.showtime_id].price_cents * len(self.seat_ids)
        off = COUPONS.get(self.coupon or "", 0)
        return round(cents * (100 - off) / 100) / 100

    def summary(self) -> str:
        if self.booking_id is None:
            return f"no booking made (left at stage {self.stage})"
        assert self.movie_id and self.showtime_id
        s = SHOWTIMES[self.showtime_id]
        return (f"booking {self.booking_id}: {MOVIES_BY_ID[self.movie_id].title}, {s.date} {s.time}, "
                f"seats {', '.join(self.seat_ids)}, {self.name} <{self.email}>, total {self.total():.2f}")

    # tools -------------------------------------------------------------------------------------
    def call(self, tool: str, params: dict[str, Any]) -> dict[str, Any]:
        """Run ``tool``; returns its result. Raises Refusal (UNKNOWN_TOOL, INVALID_PARAMS,
        TOOL_EXECUTION_FAILED)."""
        if tool not in STAGE_TOOLS[self.stage]:
            raise Refusal("UNKNOWN_TOOL", f"{tool!r} is not a tool of stage {self.stage!r}")
        problems = [e.message for e in Draft202012Validator(TOOLS[tool]["params"]).iter_errors(params)]
        if problems:
            raise Refusal("INVALID_PARAMS", f"{tool}: {'; '.join(sorted(problems))}")
        result: dict[str, Any] = getattr(self, f"_{tool}")(**params)
        return result

    def _search_movies(self, query: str = "", date: str | None = None) -> dict[str, Any]:
        self.query = query.strip()
        self.date = date
        return {"count": len(self.ui_spec()["movies"])}

    def _select_movie(self, movieId: str) -> dict[str, Any]:
        if movieId not in MOVIES_BY_ID:
            raise Refusal("INVALID_PARAMS", f"select_movie: no movie {movieId!r}")
        self.movie_id, self.stage = movieId, "showtimes"
        return {"movieId": movieId}

    def _select_showtime(self, showtimeId: str) -> dict[str, Any]:
        show = SHOWTIMES.get(showtimeId)
        if show is None or show.movie_id != self.movie_id:
            raise Refusal("INVALID_PARAMS", f"select_showtime: no showtime {showtimeId!r} for this movie")
        self.showtime_id, self.stage = showtimeId, "seats"
        return {"showtimeId": showtimeId}

    def _go_back(self) -> dict[str, Any]:
        if self.stage == "seats":
            self.stage, self.showtime_id, self.seat_ids = "showtimes", None, []
        else:
            self.stage, self.movie_id = "browse", None
        return {"stage": self.stage}

    def _select_seats(self, seatIds: list[str]) -> dict[str, Any]:
        valid = {f"{row}{n}" for row in ROWS for n in range(1, SEATS_PER_ROW + 1)}
        unknown = [s for s in seatIds if s not in valid]
        if unknown:
            raise Refusal("INVALID_PARAMS", f"select_seats: no seat {', '.join(unknown)}")
        taken = [s for s in seatIds if s in TAKEN]
        if taken:
            raise Refusal("INVALID_PARAMS", f"select_seats: seat {', '.join(taken)} is taken")
        self.seat_ids, self.stage = list(seatIds), "checkout"
        return {"seatIds": list(seatIds)}

    def _enter_contact(self, name: str, email: str) -> dict[str, Any]:
        self.name, self.email = name.strip(), email.strip()
        return {"name": self.name, "email": self.email}

    def _apply_coupon(self, code: str) -> dict[str, Any]:
        if code not in COUPONS:
            raise Refusal("INVALID_PARAMS", f"apply_coupon: unknown coupon {code!r}")
        self.coupon = code
        return {"code": code, "percentOff": COUPONS[code], "total": self.total()}

    def _confirm_booking(self) -> dict[str, Any]:
        if not self.name or not self.email:
            raise Refusal("TOOL_EXECUTION_FAILED", "confirm_booking: enter the contact details first")
        self.booking_id = f"BK-{next(_bookings)}"
        self.stage = "confirmation"
        return {"bookingId": self.booking_id, "total": self.total()}
