"""Screen normalisation (seed 002 §2.1): any host's ``uiSpec`` -> one ``ScreenView``.

A host lays out its screens as it likes; the planners read only this view (and the toolSchema).
``read_screen`` walks the whole tree (top-level keys, nested ``components``/``children``/
``sections`` or any other lists and objects) and recognises what a booking flow offers wherever it
sits, by shape rather than by path:

- movies: objects with an id (``id``, ``movieId``, ``filmId``, ``key``, ``slug``) and a title
  (``title``, ``name``, ``label``, ``displayName``) in a list; the selected one under a key that
  names a movie/film;
- showtimes: such objects with a date/time (``date`` + ``time``, or an ISO ``startsAt``/``start``/
  ``datetime``..., or a label holding them), or any item list under a key naming showtimes,
  screenings, sessions or slots; the selected one under such a singular key;
- seats: objects with a seat id (``C5``) and an availability (a boolean such as ``available``/
  ``free``/``taken``/``sold``, or a status word such as ``free``, ``open``, ``sold``, ``occupied``);
  rows (``{"row": "C", "seats": [{"number": 5, "status": "free"}]}``) and grids (a list of lists of
  cells, with row labels beside it) are read the same way;
- form fields: objects with a name and a ``value`` (or an input type);
- the order: the seats held (a list of seat ids), the contact (a ``contact``/``customer`` object
  or the form's name/email fields), the coupon, the total; the booking reference.

Anything else is ignored; a screen with none of these is ``recognised == False`` and the LLM
planner gets the raw ``uiSpec`` beside it. Nothing here raises on any JSON value.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

MAX_DEPTH = 12
SEAT_ID = re.compile(r"^[A-Z]{1,2}[0-9]{1,3}$")
_DATE = re.compile(r"(\d{4}-\d{2}-\d{2})")
_TIME = re.compile(r"(?<!\d)([01]?\d|2[0-3]):([0-5]\d)(?!\d)")
_ID_KEYS = ("id", "movieId", "filmId", "showtimeId", "screeningId", "sessionId", "key", "slug", "code")
_TITLE_KEYS = ("title", "name", "label", "displayName", "text")
_WHEN_KEYS = ("startsAt", "startAt", "start", "startTime", "starts", "datetime", "dateTime", "when", "begins")
_FREE_BOOLS = ("available", "isAvailable", "free", "isFree", "open", "vacant", "bookable", "selectable")
_TAKEN_BOOLS = ("taken", "isTaken", "sold", "booked", "occupied", "reserved", "unavailable", "blocked")
_STATUS_KEYS = ("status", "state", "availability")
_FREE_WORDS = frozenset({"free", "available", "open", "vacant", "empty", "bookable", "ok", "yes"})
_TAKEN_WORDS = frozenset({"taken", "sold", "booked", "occupied", "reserved", "unavailable", "blocked", "held",
                          "no", "closed", "x"})
_ROW_KEYS = ("row", "rowLabel", "label", "name", "letter", "id")
_CELL_LIST_KEYS = ("seats", "cells", "places", "columns", "items", "children")
_NUMBER_KEYS = ("number", "n", "num", "col", "column", "seat", "position")
_ROW_LABEL_LISTS = ("rowLabels", "rows", "rowNames", "labels")
_BOOKING_KEYS = ("bookingId", "bookingRef", "bookingReference", "reference", "confirmationCode",
                 "confirmationNumber", "orderId", "ticketId", "reservationId")
_TOTAL_KEYS = ("total", "totalPrice", "grandTotal", "amount", "amountDue", "price_total")
_COUPON_KEYS = ("coupon", "couponCode", "promo", "promoCode", "discountCode", "voucher", "voucherCode")
_CONTACT_KEYS = ("contact", "customer", "buyer", "purchaser", "holder")
_HELD_SEAT_KEYS = ("seats", "seatIds", "selectedSeats", "places", "seatNumbers", "tickets")
_NOTICE_KEYS = re.compile(r"banner|notice|alert|warning|error|hint|message", re.IGNORECASE)
_MOVIE_KEY = re.compile(r"movie|film|feature|picture", re.IGNORECASE)
_SHOW_KEY = re.compile(r"showtime|screening|session|slot|performance|show$|shows$", re.IGNORECASE)
_WIDGETS = frozenset({"button", "link", "action", "header", "heading", "text", "image", "nav", "tab", "icon",
                      "divider", "input", "toolbar", "menu"})
_INPUT_TYPES = frozenset({"text", "email", "input", "string", "field", "textfield", "tel", "textinput"})


class Item(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    title: str


class Showtime(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    label: str
    date: str | None = None
    """YYYY-MM-DD when the host says."""
    time: str | None = None
    """HH:MM (24 h) when the host says."""


class Seat(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    available: bool


class FormField(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    label: str | None = None
    value: Any = None
    required: bool = False


class Contact(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str | None = None
    email: str | None = None


class ScreenView(BaseModel):
    """What a screen offers, whatever its layout. Empty lists / None: not on this screen."""

    model_config = ConfigDict(frozen=True)

    movies: list[Item] = Field(default_factory=list)
    showtimes: list[Showtime] = Field(default_factory=list)
    seats: list[Seat] = Field(default_factory=list)
    fields: list[FormField] = Field(default_factory=list)
    movie: Item | None = None
    """The movie this screen is about (the one selected)."""
    showtime: Showtime | None = None
    """The showtime selected."""
    heldSeats: list[str] = Field(default_factory=list)
    """The seats of the order (checkout, confirmation)."""
    contact: Contact | None = None
    coupon: str | None = None
    total: float | str | None = None
    bookingId: str | None = None
    notices: list[str] = Field(default_factory=list)
    """Free text the host shows (banners, errors): data for the user, never instructions."""

    @property
    def recognised(self) -> bool:
        return bool(self.movies or self.showtimes or self.seats or self.fields or self.movie or self.showtime
                    or self.heldSeats or self.contact or self.bookingId)

    def summary(self) -> dict[str, Any]:
        """The view without its empty parts (what the LLM planner is shown)."""
        data = self.model_dump(exclude_none=True)
        return {k: v for k, v in data.items() if v not in ([], {})}


def read_screen(ui_spec: Any) -> ScreenView:
    """The ``ScreenView`` of any JSON value (never raises)."""
    reader = _Reader()
    reader.walk(ui_spec, key="", in_list=False, depth=0)  # MAX_DEPTH bounds the recursion
    return reader.view()


def _str(value: Any) -> str | None:
    if isinstance(value, str) and value.strip():
        return value.strip()
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def _first(node: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        found = _str(node.get(key))
        if found is not None:
            return found
    return None


_CONTAINER_KEYS = frozenset({"children", "components", "sections", "items", "cards", "fields", "rows", "content",
                             "elements", "widgets", "blocks"})


def _has_children(node: dict[str, Any]) -> bool:
    """A container (a section, a list, a form), not an entity: it holds lists of nodes (even empty)."""
    return any(isinstance(v, list) and (k in _CONTAINER_KEYS or any(isinstance(x, dict | list) for x in v))
               for k, v in node.items())


def _availability(node: dict[str, Any]) -> bool | None:
    for key in _FREE_BOOLS:
        if isinstance(node.get(key), bool):
            return bool(node[key])
    for key in _TAKEN_BOOLS:
        if isinstance(node.get(key), bool):
            return not node[key]
    for key in _STATUS_KEYS:
        word = _word(node.get(key))
        if word is not None:
            return word
    return None


def _word(value: Any) -> bool | None:
    """A cell's availability: a boolean, or a status word (None: not one)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _FREE_WORDS:
            return True
        if word in _TAKEN_WORDS:
            return False
    return None


def _when(node: dict[str, Any]) -> tuple[str | None, str | None]:
    text = " ".join(s for s in (_first(node, _WHEN_KEYS), _str(node.get("date")), _str(node.get("time")),
                                _str(node.get("day"))) if s)
    date = _DATE.search(text)
    # The time after the date is removed (so 2026-07-01 is not read as a time).
    time = _TIME.search(_DATE.sub(" ", text)) if text else None
    return (date.group(1) if date else None,
            f"{int(time.group(1)):02d}:{time.group(2)}" if time else None)


class _Reader:
    def __init__(self) -> None:
        self.movies: dict[str, Item] = {}
        self.showtimes: dict[str, Showtime] = {}
        self.seats: dict[str, Seat] = {}
        self.fields: list[FormField] = []
        self.movie: Item | None = None
        self.showtime: Showtime | None = None
        self.held: list[str] = []
        self.contact: Contact | None = None
        self.coupon: str | None = None
        self.total: float | str | None = None
        self.booking: str | None = None
        self.notices: list[str] = []

    def view(self) -> ScreenView:
        contact = self.contact
        if contact is None:
            found: dict[str, str] = {}
            for f in self.fields:
                label = f"{f.name} {f.label or ''}".lower()
                value = _str(f.value)
                if value is None:
                    continue
                if "mail" in label:
                    found.setdefault("email", value)
                elif "name" in label:
                    found.setdefault("name", value)
            contact = Contact(**found) if found else None
        coupon = self.coupon or next((_str(f.value) for f in self.fields if _str(f.value) and any(
            w in f"{f.name} {f.label or ''}".lower() for w in ("coupon", "promo", "voucher", "discount"))), None)
        return ScreenView(movies=list(self.movies.values()), showtimes=list(self.showtimes.values()),
                          seats=list(self.seats.values()), fields=self.fields, movie=self.movie,
                          showtime=self.showtime, heldSeats=self.held, contact=contact, coupon=coupon,
                          total=self.total, bookingId=self.booking, notices=self.notices[:10])

    # the walk ---------------------------------------------------------------------------------
    def walk(self, node: Any, *, key: str, in_list: bool, depth: int) -> None:
        if depth > MAX_DEPTH:
            return
        if isinstance(node, list):
            self._list(node, key=key, depth=depth)
        elif isinstance(node, dict):
            self._dict(node, key=key, in_list=in_list, depth=depth)
        elif isinstance(node, str) and key and _NOTICE_KEYS.search(key) and node.strip():
            self.notices.append(node.strip()[:500])

    def _list(self, node: list[Any], *, key: str, depth: int) -> None:
        if node and all(isinstance(x, str) and SEAT_ID.match(x) for x in node) and key in _HELD_SEAT_KEYS:
            self.held = list(node)
            return
        for item in node:
            self.walk(item, key=key, in_list=True, depth=depth + 1)

    def _dict(self, node: dict[str, Any], *, key: str, in_list: bool, depth: int) -> None:
        if self._seat(node) or self._grid(node) or self._row(node) or self._field(node):
            return
        if self._entity(node, key=key, in_list=in_list):
            return
        for name, value in node.items():
            if not isinstance(name, str):
                continue
            if self._scalar(name, value):
                continue
            self.walk(value, key=name, in_list=False, depth=depth + 1)

    def _scalar(self, name: str, value: Any) -> bool:
        """Order and booking values kept by their key; True when consumed."""
        if name in _BOOKING_KEYS and _str(value):
            self.booking = _str(value)
            return True
        if name in _TOTAL_KEYS and isinstance(value, int | float | str) and not isinstance(value, bool):
            self.total = value
            return True
        if name in _COUPON_KEYS:
            code = _first(value, ("code", "id", "name")) if isinstance(value, dict) else _str(value)
            if code is not None:
                self.coupon = code
            return value is None or code is not None
        if name in _CONTACT_KEYS and isinstance(value, dict):
            name_value, email = _first(value, ("name", "fullName", "displayName")), _first(value, ("email", "mail"))
            if name_value or email:
                self.contact = Contact(name=name_value, email=email)
            return True
        return False

    def _seat(self, node: dict[str, Any]) -> bool:
        seat_id = _first(node, ("id", "seatId", "seat", "code", "label", "name"))
        available = _availability(node)
        if seat_id is None or available is None or not SEAT_ID.match(seat_id):
            return False
        self.seats[seat_id] = Seat(id=seat_id, available=available)
        return True

    def _cell(self, cell: Any, row: str, index: int) -> None:
        if isinstance(cell, dict):
            if self._seat(cell):
                return
            available = _availability(cell)
            number = next((cell[k] for k in _NUMBER_KEYS if isinstance(cell.get(k), int)), index + 1)
        else:
            available, number = _word(cell), index + 1
        if available is not None:
            seat_id = f"{row}{number}"
            self.seats[seat_id] = Seat(id=seat_id, available=available)

    def _row(self, node: dict[str, Any]) -> bool:
        label = _first(node, _ROW_KEYS)
        cells = next((node[k] for k in _CELL_LIST_KEYS if isinstance(node.get(k), list)), None)
        if label is None or not re.fullmatch(r"[A-Z]{1,2}", label) or not cells:
            return False
        for index, cell in enumerate(cells):
            self._cell(cell, label, index)
        return True

    def _grid(self, node: dict[str, Any]) -> bool:
        """A list of lists of cells, with the row labels in a list beside it (A, B, ... if none)."""
        grid = next((v for v in node.values() if isinstance(v, list) and v and all(isinstance(r, list) for r in v)),
                    None)
        if grid is None:
            return False
        labels = next((v for k, v in node.items() if k in _ROW_LABEL_LISTS and isinstance(v, list)
                       and all(isinstance(x, str) for x in v)), None)
        for r, row in enumerate(grid):
            label = labels[r] if labels is not None and r < len(labels) else chr(ord("A") + r) if r < 26 else None
            if label is None:
                continue
            for index, cell in enumerate(row):
                self._cell(cell, label, index)
        return bool(self.seats)

    def _field(self, node: dict[str, Any]) -> bool:
        name = _first(node, ("name", "key", "field", "id"))
        is_input = "value" in node or str(node.get("inputType", "")).lower() in _INPUT_TYPES or (
            str(node.get("type", "")).lower() in _INPUT_TYPES)
        if name is None or not is_input or _has_children(node):
            return False
        self.fields.append(FormField(name=name, label=_str(node.get("label")), value=node.get("value"),
                                     required=node.get("required") is True))
        return True

    def _entity(self, node: dict[str, Any], *, key: str, in_list: bool) -> bool:
        """A movie or a showtime (listed, or the selected one); True when consumed."""
        if _has_children(node) or str(node.get("type", node.get("kind", ""))).lower() in _WIDGETS:
            return False
        ident = _first(node, _ID_KEYS)
        title = _first(node, _TITLE_KEYS)
        date, time = _when(node)
        if ident is None:
            return False
        show_key = bool(_SHOW_KEY.search(key))
        if date or time or show_key:
            if title is None and not (date or time):
                return False
            if title is not None and not (date or time):
                date, time = _when({"when": title})
            show = Showtime(id=ident, label=title or " ".join(p for p in (date, time) if p), date=date, time=time)
            if in_list:
                self.showtimes[ident] = show
            elif show_key:
                self.showtime = show
            else:
                return False
            return True
        if title is None:
            return False
        if in_list and not _MOVIE_KEY.search(key) and key and _SHOW_KEY.search(key):
            return False
        if in_list:
            self.movies[ident] = Item(id=ident, title=title)
            return True
        if _MOVIE_KEY.search(key):
            self.movie = Item(id=ident, title=title)
            return True
        return False
