"""Mail read by Fathom itself: a message (``.eml``, Outlook ``.msg``) or an archive
(``.mbox``), message by message, with its attachments.

Each message is its own source: its chunks carry the message's label as their
title — subject, sender and date (``Cargo manifest — Bo Lind, 2 Dec 2026``) — so a
citation names the message it came from, and its first chunk starts with the
From, To, Cc and Date lines. The body is the plain-text part, or the HTML part's
text when there is no plain one (HTML is read as text: nothing it links to is
loaded). Charsets are decoded as the message declares; an unknown one falls back
to UTF-8 with replacement characters.

Attachments of a type Fathom reads are read by the same converter as any file
(Docling, OCR, text; a mail attached to a mail, one level down) from a private
temporary copy named only by its suffix; pictures the HTML shows inline (a
signature's logo) are part of the layout and left alone, and cited as their own source linked to
the message: ``manifest.pdf, attached to Cargo manifest — Bo Lind, 2 Dec 2026``.
Nothing an attachment holds is run. A malformed message is read as far as it
goes and named in the document's note; a message that cannot be read at all is
named there too, and the rest of the file is still indexed.
"""

from __future__ import annotations

import contextlib
import email
import email.policy
import email.utils
import mailbox
import mimetypes
import re
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from email.message import EmailMessage, MIMEPart
from pathlib import Path

from app.core.errors import IngestError
from app.ingest.chunking.piece import ChunkPiece
from app.ingest.chunking.plain_text import chunk_plain_text
from app.ingest.chunking.tokens import TokenCounter
from app.ingest.convert.results import ConvertedDocument
from app.ingest.file_types import file_kind

NO_SUBJECT = "(no subject)"
MAX_NAMED_PROBLEMS = 3  # named in the note; the rest are counted

# reads an attachment's temporary copy as any file is read (None: attachments are only named)
ReadAttachment = Callable[[Path], ConvertedDocument]
# told how far an archive is read: (messages read, messages in it)
MessageReport = Callable[[int, int], None]
REPORT_EVERY_S = 0.5  # an archive's progress is said at its first message, then at most this often


@dataclass
class _Tally:
    messages: int = 0
    attachments: int = 0
    problems: list[str] = field(default_factory=list)

    def note(self, archive: bool) -> str:
        parts = [f"{self.messages} messages"] if archive else []
        if self.attachments:
            parts.append(
                f"{self.attachments} attachment{'s' if self.attachments != 1 else ''} read"
            )
        if self.problems:
            named = "; ".join(self.problems[:MAX_NAMED_PROBLEMS])
            more = len(self.problems) - MAX_NAMED_PROBLEMS
            parts.append(named + (f"; and {more} more" if more > 0 else ""))
        return "; ".join(parts)


class MailReader:
    """Reads one mail file into chunk pieces; ``read_attachment`` reads attachments."""

    def __init__(
        self,
        counter: TokenCounter,
        max_tokens: int,
        read_attachment: ReadAttachment | None,
        on_message: MessageReport | None = None,
    ) -> None:
        self.counter = counter
        self.max_tokens = max_tokens
        self.read_attachment = read_attachment
        self.on_message = on_message

    def convert(self, path: Path) -> ConvertedDocument:
        archive = path.suffix.lower() == ".mbox"
        tally = _Tally()
        pieces: list[ChunkPiece] = []
        subjects: list[str] = []
        said_at = -REPORT_EVERY_S
        for number, total, raw in _raw_messages(path):
            if (
                self.on_message is not None
                and total > 1
                and time.monotonic() - said_at >= REPORT_EVERY_S
            ):
                self.on_message(number, total)
                said_at = time.monotonic()
            try:
                message = email.message_from_bytes(raw, policy=email.policy.default)
                assert isinstance(message, EmailMessage)
                pieces.extend(self._message_pieces(message, tally))
                subjects.append(_subject(message))
                tally.messages += 1
            except Exception as exc:  # one unreadable message: the others still count
                tally.problems.append(f"message {number} could not be read ({_short(exc)})")
        if not pieces:
            detail = f" ({tally.problems[0]})" if tally.problems else ""
            raise IngestError(f"The mail holds no message with text to index{detail}.")
        title = path.name if archive or not subjects else subjects[0]
        return ConvertedDocument(title=title, pieces=tuple(pieces), remark=tally.note(archive))

    def _message_pieces(self, message: EmailMessage, tally: _Tally) -> list[ChunkPiece]:
        subject = _subject(message)
        label = message_label(message)
        attached = _attachments(message)
        names = [_attachment_name(part, n) for n, part in enumerate(attached, start=1)]
        header = "\n".join(
            f"{name}: {_one_line(message[name])}"
            for name in ("From", "To", "Cc", "Date")
            if message[name]
        )
        body = _body_text(message)
        listed = f"Attachments: {', '.join(names)}" if names else ""
        text = "\n\n".join(part for part in (header, body, listed) if part.strip())
        pieces = [
            ChunkPiece(
                text=piece.text,
                embed_text=f"{subject}\n{piece.text}",
                headings=(subject,),
                title=label,
            )
            for piece in chunk_plain_text(text, self.counter, self.max_tokens)
        ]
        for name, part in zip(names, attached, strict=True):
            pieces.extend(self._attachment_pieces(name, part, subject, label, tally))
        defects = _defects(message)  # after decoding: a bad base64 payload is found only then
        if defects:
            tally.problems.append(
                f"“{subject}” is malformed ({', '.join(defects)}); read as far as it goes"
            )
        return pieces

    def _attachment_pieces(
        self, name: str, part: MIMEPart, subject: str, label: str, tally: _Tally
    ) -> list[ChunkPiece]:
        if self.read_attachment is None:
            return []
        suffix = _attachment_suffix(name, part)
        if not suffix or file_kind(Path(f"attachment{suffix}")) is None:
            return []  # a type Fathom does not read: named in the message, nothing more
        data = _attachment_bytes(part)
        if not data:
            return []
        with tempfile.TemporaryDirectory(prefix="fathom-attachment-") as folder:
            copy = Path(folder) / f"attachment{suffix}"
            copy.write_bytes(data)
            try:
                read = self.read_attachment(copy)
            except IngestError as exc:
                tally.problems.append(f"attachment {name} of “{subject}” not read: {exc}")
                return []
        tally.attachments += 1
        title = f"{name}, attached to {label}"
        return [
            ChunkPiece(
                text=piece.text,
                embed_text=f"{name}\n{piece.embed_text}",
                headings=(subject, name, *piece.headings),
                page=piece.page,
                title=title,
            )
            for piece in read.pieces
        ]


def message_label(message: EmailMessage) -> str:
    """How a message is cited: ``Subject — Sender, 2 Dec 2026`` (what is known of it)."""
    sender = ""
    if message["From"]:
        name, address = email.utils.parseaddr(str(message["From"]))
        sender = _one_line(name or address or str(message["From"]))
    when = _date(message)
    who = ", ".join(part for part in (sender, when) if part)
    return f"{_subject(message)} — {who}" if who else _subject(message)


def _raw_messages(path: Path) -> Iterator[tuple[int, int, bytes]]:
    """(number from 1, how many, the message's bytes) for each message of the file."""
    suffix = path.suffix.lower()
    try:
        if suffix == ".mbox":
            box = mailbox.mbox(str(path), create=False)
            try:
                keys = list(box.iterkeys())
                for number, key in enumerate(keys, start=1):
                    yield number, len(keys), box.get_bytes(key)
            finally:
                box.close()
        elif suffix == ".msg":
            from docling.backend.email_backend import EmailDocumentBackend

            yield 1, 1, EmailDocumentBackend._msg_to_rfc822_bytes(path.read_bytes())
        else:
            yield 1, 1, path.read_bytes()
    except (OSError, mailbox.Error) as exc:
        raise IngestError(f"The mail cannot be read ({exc}).") from None
    except ImportError as exc:
        raise IngestError(
            f"Reading Outlook .msg files needs the python-oxmsg package ({exc})."
        ) from None
    except Exception as exc:  # a damaged Outlook file
        raise IngestError(f"The Outlook message cannot be read ({_short(exc)}).") from None


def _subject(message: EmailMessage) -> str:
    return _one_line(message.get("Subject", "")) or NO_SUBJECT


def _date(message: EmailMessage) -> str:
    raw = _one_line(message.get("Date", ""))
    if not raw:
        return ""
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return raw[:40]
    return f"{when.day} {when:%b %Y}"


def _body_text(message: EmailMessage) -> str:
    part = message.get_body(preferencelist=("plain", "html"))
    if part is None:
        payload = message.get_payload()  # a broken multipart: its text is still there
        return payload.strip() if isinstance(payload, str) else ""
    content = _decoded(part)
    if part.get_content_type() == "text/html":
        from bs4 import BeautifulSoup

        content = BeautifulSoup(content, "html.parser").get_text("\n")
    return content.strip()


def _decoded(part: MIMEPart) -> str:
    try:
        return str(part.get_content())
    except (LookupError, UnicodeError):  # an unknown or wrong charset: the text, however garbled
        payload = part.get_payload(decode=True)
        return (
            payload.decode("utf-8", errors="replace")
            if isinstance(payload, bytes)
            else str(payload)
        )


def _attachments(message: EmailMessage) -> list[MIMEPart]:
    """The message's attachments, less the pictures its HTML shows inline (a signature's
    logo, referenced as ``cid:``): they are part of the layout, and reading each by OCR
    would cost seconds per message."""
    shown: set[str] = set()
    for part in message.walk():
        if part.get_content_type() == "text/html":
            with contextlib.suppress(Exception):  # a body that cannot be decoded references nothing
                shown.update(m.lower() for m in _CID.findall(str(part.get_content())))
    return [
        part
        for part in message.iter_attachments()
        if not (part.get_content_maintype() == "image" and _content_id(part) in shown)
    ]


_CID = re.compile(r"cid:([^\s\"'>)]+)", re.IGNORECASE)


def _content_id(part: MIMEPart) -> str:
    return str(part.get("Content-ID", "")).strip().strip("<>").lower()


def _attachment_name(part: MIMEPart, number: int) -> str:
    name = _one_line(part.get_filename() or "")
    if not name and part.get_content_type() == "message/rfc822":
        inner = part.get_content()
        name = f"{_subject(inner)}.eml" if isinstance(inner, EmailMessage) else ""
    return Path(name).name[:120] if name else f"attachment {number}"


_SUFFIX = re.compile(r"^\.[a-z0-9]{1,10}$")


def _attachment_suffix(name: str, part: MIMEPart) -> str:
    """The suffix the temporary copy gets: the file name's, else the content type's."""
    if part.get_content_type() == "message/rfc822":
        return ".eml"
    suffix = Path(name).suffix.lower()
    if _SUFFIX.match(suffix):
        return suffix
    guessed = mimetypes.guess_extension(part.get_content_type()) or ""
    return guessed if _SUFFIX.match(guessed) else ""


def _attachment_bytes(part: MIMEPart) -> bytes:
    if part.get_content_type() == "message/rfc822":
        inner = part.get_content()
        return inner.as_bytes() if isinstance(inner, EmailMessage) else b""
    payload = part.get_payload(decode=True)
    return payload if isinstance(payload, bytes) else b""


def _defects(message: EmailMessage) -> list[str]:
    """The parser's complaints about a message and its parts, in words."""
    seen: dict[str, None] = {}
    for part in message.walk():
        for defect in part.defects:
            words = re.sub(
                r"(?<!^)(?=[A-Z])", " ", type(defect).__name__.removesuffix("Defect")
            ).lower()
            seen.setdefault(words, None)
    return list(seen)


def _one_line(value: object) -> str:
    return " ".join(str(value or "").split())


def _short(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:160] or type(exc).__name__
