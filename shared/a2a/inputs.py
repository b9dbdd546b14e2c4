"""The files an A2A caller sends (docs/a2a.md, "Files"): a message's ``raw`` (bytes) and ``url``
parts become parts of the run's first turn, so the model reads them.

- A media type the model reads natively (``MODEL_MEDIA_TYPES``: images, PDF, audio, video) is
  given to it as the file's bytes (Gemini ``inlineData``).
- Any other media type is accepted when the content is UTF-8 text (JSON, CSV, YAML, source code,
  ``text/*`` ...: most formats that are not in any list are text): the model gets the text,
  headed by the file's name and type. Bytes that are not text, of a type the model cannot read,
  are refused with ``ContentTypeNotSupportedError`` (A2A 1.0, section 3.1.1).
- A ``url`` is fetched once, when the message arrives, under the same rule as every URL a user
  gives us (``MCP_ALLOW_PRIVATE_URLS`` off: public addresses only; the connection goes to the
  checked address, each redirect checked again: ``shared/connectors/web.py``); its media type is
  the part's ``mediaType``, else the one the server names.
- A message's files together hold at most ``MAX_FILE_BYTES`` (they are stored with the run's
  first turn, one document).

Text and data parts need no check: their content is text or JSON whatever media type they name.
"""

from __future__ import annotations

import base64
import mimetypes
from collections.abc import Callable
from typing import TYPE_CHECKING

from a2a.types import a2a_pb2 as pb
from a2a.utils import errors as a2a_errors

from shared.models.base import Blob, Part

if TYPE_CHECKING:
    from shared.config import Settings

MAX_FILE_BYTES = 512 * 1024
"""All the files of one message together (bytes, before base64)."""
FETCH_TIMEOUT_S = 15.0
MODEL_MEDIA_TYPES = ("image/png", "image/jpeg", "image/webp", "image/heic", "image/heif", "application/pdf",
                     "audio/wav", "audio/mp3", "audio/mpeg", "audio/aiff", "audio/aac", "audio/ogg", "audio/flac",
                     "video/mp4", "video/mpeg", "video/quicktime", "video/webm", "video/3gpp")
"""The media types Gemini reads as bytes (images, documents, audio, video)."""
TEXT_MEDIA_TYPES = ("text/plain", "application/json", "text/markdown", "text/csv", "text/html", "text/xml",
                    "application/xml", "application/yaml")
INPUT_MODES = [*TEXT_MEDIA_TYPES, *MODEL_MEDIA_TYPES]
"""What the agent card declares (``defaultInputModes``); other media types are taken as text."""
DEFAULT_TYPE = "application/octet-stream"

Fetch = Callable[[str], tuple[bytes, str]]
"""``url -> (body, media type the server named or "")``."""


def _bare(media_type: str) -> str:
    return media_type.split(";", 1)[0].strip().lower()


def _refuse(message: str) -> a2a_errors.A2AError:
    return a2a_errors.ContentTypeNotSupportedError(message=message[:500])


def file_part(body: bytes, media_type: str, name: str) -> Part:
    """One file as the model gets it: its bytes (a type it reads) or its text (any other type)."""
    mime = _bare(media_type) or _bare(mimetypes.guess_type(name)[0] or "") or DEFAULT_TYPE
    if mime in MODEL_MEDIA_TYPES:
        return Part(inline_data=Blob(mime_type=mime, data=base64.b64encode(body).decode("ascii"),
                                     display_name=name or None))
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is None or "\x00" in text:
        raise _refuse(f"media type {mime} of file {name or '(unnamed)'} is not supported: the agent reads "
                      f"{', '.join(MODEL_MEDIA_TYPES)} and text of any media type, and these bytes are not text")
    return Part(text=f"[file {name or '(unnamed)'} ({mime})]\n{text}")


def check_modes(message: pb.Message) -> None:
    """What can be judged before anything is fetched: the bytes sent inline (``raw``)."""
    total = 0
    for part in message.parts:
        if part.WhichOneof("content") == "raw":
            total += len(part.raw)
            file_part(part.raw, part.media_type, part.filename)
    if total > MAX_FILE_BYTES:
        raise a2a_errors.InvalidParamsError(
            message=f"the message's files hold {total} bytes; at most {MAX_FILE_BYTES} are taken")


def attachments(message: pb.Message, fetch: Fetch) -> list[Part]:
    """The message's files as model parts, in order (``url`` parts fetched)."""
    out: list[Part] = []
    total = 0
    for part in message.parts:
        kind = part.WhichOneof("content")
        if kind == "raw":
            body, named = part.raw, ""
        elif kind == "url":
            body, named = fetch(part.url)
        else:
            continue
        total += len(body)
        if total > MAX_FILE_BYTES:
            raise a2a_errors.InvalidParamsError(
                message=f"the message's files hold more than {MAX_FILE_BYTES} bytes; at most that is taken")
        name = part.filename or (part.url.rsplit("/", 1)[-1].split("?", 1)[0] if kind == "url" else "")
        out.append(file_part(body, part.media_type or named, name))
    return out


def fetcher(settings: Settings) -> Fetch:
    """Fetch a file part's URL under the user-URL rule (``MCP_ALLOW_PRIVATE_URLS`` lifts it)."""
    from urllib.parse import urlsplit

    from shared.connectors.web import WebFetcher
    from shared.errors import ToolError

    def fetch(url: str) -> tuple[bytes, str]:
        try:
            host = urlsplit(url).hostname or ""
        except ValueError:
            host = ""
        allow = [host] if settings.mcp_allow_private_urls and host else []
        try:
            got = WebFetcher(allow_hosts=allow, max_bytes=MAX_FILE_BYTES).fetch_file(url, timeout_s=FETCH_TIMEOUT_S)
        except ToolError as err:
            raise a2a_errors.InvalidParamsError(
                message=f"file part url {url[:200]} could not be read: {str(err).replace('web_fetch', 'fetch')}"
            ) from None
        return got.body, got.content_type

    return fetch
