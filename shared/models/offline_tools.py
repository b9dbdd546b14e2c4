"""How the offline model picks a tool for a prompt and fills its arguments (deterministic rules).

Picking (``choose``), first rule that applies:

1. **The tool is named**: the prompt contains a tool's name (``use time_get_current_time``,
   backticks optional); the longest name wins.
2. **Plans and memory**: "make a plan to …" / "plan: …" calls ``agent_create_plan`` (the rest is
   the objective); "what do you remember about …" / "recall …" calls ``search_memory``;
   "remember (that) …" / "note …" / "save …" calls ``save_memory``.
3. **The prompt asks for what a tool's name says**: the words of each tool's name (``github``,
   ``issue``, ``create``) are looked for among the prompt's words and their synonyms (open a /
   file / add / new → create; show / which → list; read / check / what → get; find / look up →
   search; email / inbox → gmail; a ``#channel`` → slack; an ``owner/repo`` → github; a URL → web).
   A tool qualifies when two words of its name match, or every word after its first (its provider
   or MCP server) does and one of them names a thing, not only an action; the most matching words
   win, then the fewest words of its name left unmatched, then a tool that reads (get, list,
   search, read) over one that may change something, then the most words shared with its
   description, then the first declared.

Arguments (``fill``) come from the prompt and the tool's JSON schema, by property name and type:
``repo`` ← ``owner/name``; ``number`` ← ``#12`` / ``issue 12``; ``title``/``subject``/``name`` ←
the text after "titled"/"called"/"named" (or the first quoted text); ``body``/``text``/``message``
← the text after "saying"/"with body"/"that" (or the second quoted text); ``query`` ← the text
after "for"/"about"; ``url`` ← a URL; ``to`` ← e-mail addresses; ``channel`` ← ``#name``;
``*timezone*`` ← an IANA name (``Europe/Paris``) or a city that names one (``Tokyo`` →
``Asia/Tokyo``), ``source_timezone``/``target_timezone`` ← "from X to Y"; ``time`` ← ``HH:MM``;
``path`` ← a file path; ``*Id`` ← an id like ``prj_x1``; enums ← a value the prompt says; other
required strings ← the prompt's own words. A required argument that cannot be found is not
guessed: the model says what it needs instead of calling the tool.
"""

from __future__ import annotations

import functools
import re
import zoneinfo
from dataclasses import dataclass
from typing import Any

from shared.models.base import ToolDeclaration

_WORD = re.compile(r"[a-z0-9]+")
_QUOTED = re.compile(r"[\"“”«]([^\"“”«»]{1,500})[\"“”»]|(?<![A-Za-z])'([^']{1,500})'(?![A-Za-z])")
_REPO = re.compile(r"\b([A-Za-z0-9][A-Za-z0-9-]{0,38})/([A-Za-z0-9._-]{1,100})\b")
_URL = re.compile(r"https?://[^\s\"'<>)]+")
_EMAIL = re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b")
_NUMBER = re.compile(r"(?:#|\b(?:issue|pull request|pr|number|no\.?)\s*#?)(\d{1,9})\b", re.IGNORECASE)
_CHANNEL = re.compile(r"(?<![\w&])#([a-z0-9][a-z0-9_-]{0,79})\b")
_TIME = re.compile(r"\b([01]?\d|2[0-3]):([0-5]\d)\b")
_ISO = re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?(?:Z|[+-]\d{2}:\d{2})?)?\b")
_ID = re.compile(r"\b[a-z]{2,6}_[A-Za-z0-9_-]{3,}\b")
_PATH = re.compile(r"(?<![\w/.])((?:[\w.-]+/)*[\w-]+\.[A-Za-z0-9]{1,8})\b")

_TITLE_CUE = re.compile(r"\b(?:titled|entitled|called|named|with (?:the )?(?:title|subject|name)|subject)\s*:?\s*(.+)",
                        re.IGNORECASE | re.DOTALL)
_BODY_CUE = re.compile(r"\b(?:saying|that says|with (?:the )?body|body|with (?:the )?(?:text|message)|"
                       r"message)\s*:?\s*(.+)", re.IGNORECASE | re.DOTALL)
_QUERY_CUE = re.compile(r"\b(?:for|about|matching|on)\s+(.+)", re.IGNORECASE | re.DOTALL)
_FROM_TO = re.compile(r"\bfrom\s+([A-Za-z_/ ]+?)\s+(?:time\s+)?to\s+([A-Za-z_/ ]+?)(?:\s+time)?\b[\s?.!,]*"
                      r"(?:$|\bat\b|\band\b)", re.IGNORECASE)

_REMEMBER = re.compile(r"\b(?:remember|note|save)\b(?:\s+that)?\s*[:,]?\s*(.+)", re.IGNORECASE | re.DOTALL)
_RECALL = re.compile(r"\b(?:what (?:do |did )?you (?:know|remember)|recall|search (?:my )?memor\w*)\b(.*)",
                     re.IGNORECASE | re.DOTALL)
_PLAN = re.compile(r"^\s*(?:please\s+)?(?:(?:make|create|draw up|write|prepare)\s+(?:me\s+)?an?\s+(?:\w+\s+)?plan"
                   r"|plan)\b\s*(?:to|for|:|that)?\s*(.+)", re.IGNORECASE | re.DOTALL)

SYNONYMS: dict[str, tuple[str, ...]] = {
    "open": ("create",), "file": ("create",), "add": ("create",), "new": ("create",), "raise": ("create",),
    "make": ("create",), "start": ("create",), "schedule": ("create", "event"), "book": ("create", "event"),
    "show": ("list", "get"), "which": ("list",), "all": ("list",),
    "read": ("get",), "check": ("get",), "what": ("get",), "view": ("get",), "see": ("get",), "tell": ("get",),
    "find": ("search",), "look": ("search",), "lookup": ("search",), "google": ("search", "web"),
    "email": ("gmail",), "mail": ("gmail",), "inbox": ("gmail",), "e": (),
    "meeting": ("event", "calendar"), "appointment": ("event", "calendar"), "agenda": ("calendar", "search"),
    "remember": ("save", "memory"), "recall": ("search", "memory"), "memories": ("memory",),
    "pr": ("pull",), "clock": ("time",), "now": ("current",), "convert": ("convert",),
    "page": ("web", "fetch"), "download": ("fetch",), "post": ("send",), "repository": ("repo",),
    "comment": ("comment", "create"), "notes": ("memory",), "summarise": ("search",), "summarize": ("search",),
    "change": ("update",), "edit": ("update",), "rename": ("update",), "reply": ("reply",),
}
VERBS = frozenset({
    "create", "get", "list", "search", "read", "send", "update", "close", "fetch", "save", "set", "delete",
    "add", "remove", "run",
})
"""Words of tool names that say what is done, not to what: alone they do not pick a tool."""
READS = frozenset({"get", "list", "search", "read"})
STOP = frozenset({
    "a", "an", "the", "to", "of", "in", "on", "for", "and", "or", "my", "me", "i", "it", "is", "be", "with",
    "from", "by", "at", "this", "that", "your", "you", "please", "its", "their", "as",
})


def words(text: str) -> set[str]:
    """The words of ``text`` (lower case, a plural's ``s`` dropped) with their synonyms."""
    out: set[str] = set()
    for w in _WORD.findall(text.lower()):
        stem = w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w
        out.update((w, stem, *SYNONYMS.get(w, ()), *SYNONYMS.get(stem, ())))
    return out - STOP


def prompt_words(text: str) -> set[str]:
    """``words`` plus what the prompt's shapes say: ``owner/repo`` → github, URL → web, ``#x`` → slack."""
    found = words(re.sub(r"\bopen\s+(?=issues?\b|pull requests?\b|prs?\b)", "", text, flags=re.IGNORECASE))
    if _URL.search(text):
        found.update(("web", "fetch"))
    elif any(not _is_timezone(m.group(0)) for m in _REPO.finditer(text)):
        found.add("github")
    if _CHANNEL.search(text):
        found.add("slack")
    if _TIME.search(text):
        found.add("time")
    return found


@dataclass(frozen=True)
class Choice:
    tool: ToolDeclaration
    args: dict[str, Any]
    missing: list[str]
    """Required arguments the prompt does not give (then the tool is not called)."""


def choose(text: str, tools: list[ToolDeclaration]) -> Choice | None:
    """The tool the prompt asks for, with its arguments (rules above); None when it asks for none."""
    by_name = {t.name: t for t in tools}
    named = [t for t in tools if re.search(rf"(?<![\w]){re.escape(t.name)}(?![\w])", text)]
    if named:
        tool = max(named, key=lambda t: len(t.name))
        rest = re.sub(rf"`?{re.escape(tool.name)}`?", " ", text)
        rest = re.sub(r"^\s*(?:please\s+)?(?:use|call|run|with)\b\s*(?:the\s+tool\s*)?[,:]?\s*", "", rest.strip(),
                      flags=re.IGNORECASE)
        return _filled(tool, rest.strip() or text)
    special = _special(text, by_name)
    if special is not None:
        return special
    matched = best_match(text, tools)
    return _filled(matched, text) if matched is not None else None


def _special(text: str, tools: dict[str, ToolDeclaration]) -> Choice | None:
    plan = _PLAN.search(text)
    if plan and "agent_create_plan" in tools:
        objective = plan.group(1).strip().rstrip(".") or text
        return Choice(tools["agent_create_plan"], {"objective": objective[:4000]}, [])
    recall = _RECALL.search(text)
    if recall and "search_memory" in tools:
        query = re.sub(r"^(?:about|on|for|regarding)\s+", "", recall.group(1).strip(" ?.")) or text
        return Choice(tools["search_memory"], {"query": query}, [])
    remember = _REMEMBER.search(text)
    if remember and "save_memory" in tools and not re.search(r"\bsave\b.*\b(?:draft|file|issue)\b", text, re.I):
        return Choice(tools["save_memory"], {"text": remember.group(1).strip().rstrip(".")}, [])
    return None


def _name_words(name: str) -> list[str]:
    return [w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w
            for w in name.lower().split("_") if w and w not in STOP]


def best_match(text: str, tools: list[ToolDeclaration]) -> ToolDeclaration | None:
    """The tool whose name the prompt's words say best (rule 3 above), or None."""
    said = prompt_words(text)
    best: tuple[int, int, int, int, int, int] | None = None
    chosen: ToolDeclaration | None = None
    for i, tool in enumerate(tools):
        name = _name_words(tool.name)
        unique = set(name)
        hits = len(unique & said)
        tail = set(name[1:])
        full_tail = bool(tail - VERBS) and tail <= said
        if hits < 2 and not full_tail:
            continue
        desc = len(words(tool.description.split(".")[0]) & said)
        reads = int(bool(unique & READS))
        score = (hits, -len(unique - said), int(full_tail), reads, desc, -i)
        if best is None or score > best:
            best, chosen = score, tool
    return chosen


# ---- arguments ------------------------------------------------------------------------------

def _quoted(text: str) -> list[str]:
    return [(m.group(1) or m.group(2)).strip() for m in _QUOTED.finditer(text)]


def _clause(text: str) -> str:
    """A cue's text up to the next cue or the end, without surrounding quotes and punctuation."""
    q = _QUOTED.match(text.strip())
    if q:
        return (q.group(1) or q.group(2)).strip()
    cut = re.split(r"\s+(?:saying|with (?:the )?body|that says|and (?:then|also|label|assign)|in "
                   r"(?=[A-Za-z0-9-]+/)|on (?=[A-Za-z0-9-]+/))\b", text, maxsplit=1, flags=re.IGNORECASE)[0]
    return cut.strip().strip("\"'“”").rstrip(" .!?,;")


@functools.cache
def _zones() -> dict[str, str]:
    """City (the last part of an IANA name, lower case, spaces for underscores) → IANA name."""
    try:
        names = zoneinfo.available_timezones()
    except Exception:  # no tz database: only explicit names and UTC
        names = set()
    out: dict[str, str] = {}
    for n in sorted(names):
        if "/" in n and not n.startswith(("Etc/", "SystemV/", "posix/", "right/")):
            out.setdefault(n.rsplit("/", 1)[1].lower().replace("_", " "), n)
    out.setdefault("utc", "UTC")
    return out


def _is_timezone(token: str) -> bool:
    head = token.split("/", 1)[0]
    return head in {"Africa", "America", "Antarctica", "Asia", "Atlantic", "Australia", "Europe", "Indian",
                    "Pacific", "Etc"}


def timezone_in(text: str) -> str | None:
    """An IANA name in ``text`` (``Europe/Paris``), or one a city of ``text`` names (``Tokyo``)."""
    for m in re.finditer(r"\b[A-Z][A-Za-z]+/[A-Za-z_]+(?:/[A-Za-z_]+)?\b", text):
        if _is_timezone(m.group(0)):
            return m.group(0)
    zones = _zones()
    tokens = re.findall(r"[A-Za-z]+", text)
    for size in (3, 2, 1):
        for i in range(len(tokens) - size + 1):
            key = " ".join(tokens[i:i + size]).lower()
            if key in zones and (size > 1 or tokens[i][0].isupper() or key == "utc"):
                return zones[key]
    return None


def _types(schema: dict[str, Any]) -> set[str]:
    if "type" in schema:
        t = schema["type"]
        return set(t) if isinstance(t, list) else {t}
    alternatives = [s for s in schema.get("anyOf", []) if isinstance(s, dict)]
    return {str(s["type"]) for s in alternatives if s.get("type") not in (None, "null")}


def _enum(schema: dict[str, Any]) -> list[Any]:
    if "enum" in schema:
        return list(schema["enum"])
    for s in schema.get("anyOf", []):
        if isinstance(s, dict) and "enum" in s:
            return list(s["enum"])
    return []


def _without_shapes(text: str) -> str:
    """The prompt's words without repos, URLs, numbers and cues: what a free-text argument says."""
    out = _URL.sub(" ", text)
    out = _REPO.sub(lambda m: m.group(0) if _is_timezone(m.group(0)) else " ", out)
    return re.sub(r"\s+", " ", out).strip().rstrip(" .!?")


def value_for(prop: str, schema: dict[str, Any], text: str, *, required: bool) -> Any:
    """The value of property ``prop`` that ``text`` gives, or None."""
    key = prop.lower()
    types = _types(schema)
    quoted = _quoted(text)
    enum = _enum(schema)
    if enum:
        said = words(text)
        hit = next((v for v in enum if isinstance(v, str) and v.lower() in said), None)
        return hit if hit is not None else (enum[0] if required else None)
    if key in ("repo", "repository", "full_name"):
        m = next((m for m in _REPO.finditer(text) if not _is_timezone(m.group(0))), None)
        return m.group(0) if m else None
    if key in ("owner",):
        m = next((m for m in _REPO.finditer(text) if not _is_timezone(m.group(0))), None)
        return m.group(1) if m else None
    if "timezone" in key:
        ft = _FROM_TO.search(text)
        if ft and key.startswith("source"):
            return timezone_in(ft.group(1).title() if ft.group(1).islower() else ft.group(1))
        if ft and key.startswith("target"):
            return timezone_in(ft.group(2).title() if ft.group(2).islower() else ft.group(2))
        return timezone_in(text) or ("UTC" if required else None)
    if key == "time" and types <= {"string"}:
        m = _TIME.search(text)
        return f"{int(m.group(1)):02d}:{m.group(2)}" if m else None
    if key in ("url", "uri", "link"):
        m = _URL.search(text)
        return m.group(0).rstrip(".,") if m else None
    if key in ("to", "recipients", "cc", "bcc", "attendees"):
        found = _EMAIL.findall(text)
        if key == "to" or (found and key == "attendees"):
            return found or None
        return None
    if key in ("channel", "channel_id"):
        m = _CHANNEL.search(text)
        return m.group(1) if m else None
    if "integer" in types or "number" in types:
        if key in ("number", "issue_number", "pull_number", "issue", "pr"):
            m = _NUMBER.search(text)
            return int(m.group(1)) if m else None
        if required:
            m = re.search(r"\b\d{1,9}\b", text)
            return int(m.group(0)) if m else None
        return None
    if "boolean" in types:
        return False if required else None
    if "array" in types:
        return [] if required else None
    if key == "path":
        m = next((m for m in _PATH.finditer(text) if "@" not in m.group(0) and not _URL.match(m.group(0))), None)
        return m.group(1) if m else None
    if (key.endswith("id") and key != "id") or key.endswith("_id"):
        m = _ID.search(text)
        return m.group(0) if m else None
    if key in ("start", "end", "time_min", "time_max", "date", "duedate", "due_date"):
        found = _ISO.findall(text)
        index = 1 if key in ("end", "time_max") and len(found) > 1 else 0
        return found[index] if found else None
    if key in ("title", "subject", "name", "summary"):
        m = _TITLE_CUE.search(text)
        if m:
            return _clause(m.group(1))[:200] or None
        if quoted:
            return quoted[0][:200]
        return _without_shapes(text)[:80] if required else None
    if key in ("body", "text", "message", "content", "description", "comment", "note"):
        m = _BODY_CUE.search(text)
        if m:
            return _clause(m.group(1))[:4000] or None
        if len(quoted) > 1:
            return quoted[1]
        return _without_shapes(text)[:4000] if required else None
    if key in ("query", "q", "search", "keywords", "objective", "topic"):
        m = _QUERY_CUE.search(text)
        if m and key != "objective":
            return _clause(m.group(1))[:500] or None
        return _without_shapes(text)[:500] or None
    if required and "string" in types:
        return quoted[0] if quoted else _without_shapes(text)[:200] or None
    return None


def fill(tool: ToolDeclaration, text: str) -> tuple[dict[str, Any], list[str]]:
    """``tool``'s arguments from ``text`` (only what the prompt gives, and what is required), and the
    required properties it does not give."""
    props: dict[str, Any] = tool.parameters.get("properties", {}) or {}
    required = set(tool.parameters.get("required", []) or [])
    args: dict[str, Any] = {}
    missing: list[str] = []
    for prop, schema in props.items():
        value = value_for(prop, schema if isinstance(schema, dict) else {}, text, required=prop in required)
        if value is not None:
            args[prop] = value
        elif prop in required:
            missing.append(prop)
    return args, missing


def _filled(tool: ToolDeclaration, text: str) -> Choice:
    args, missing = fill(tool, text)
    return Choice(tool, args, missing)
