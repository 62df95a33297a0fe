"""An ``.mbox`` mail archive read message by message.

Each message becomes its own run of chunks, headed by its subject, and its first
chunk carries the sender, recipient and date, so a citation names the message it
came from. The body is the plain-text part, or the HTML part's text when there is
no plain one; attachments are named (their content is not read here). Charsets
are decoded as the message declares (an unknown one falls back to UTF-8 with
replacement characters), and a message that cannot be parsed at all is left out
and counted in the document's note — the rest of the archive is still indexed.
"""

from __future__ import annotations

import email
import email.policy
import mailbox
from email.message import EmailMessage, MIMEPart
from pathlib import Path

from app.core.errors import IngestError
from app.ingest.chunking.piece import ChunkPiece
from app.ingest.chunking.plain_text import chunk_plain_text
from app.ingest.chunking.tokens import TokenCounter
from app.ingest.convert.results import ConvertedDocument

NO_SUBJECT = "(no subject)"


def convert_mbox_file(path: Path, counter: TokenCounter, max_tokens: int) -> ConvertedDocument:
    try:
        box = mailbox.mbox(str(path), create=False)
        keys = list(box.iterkeys())
    except (OSError, mailbox.Error) as exc:
        raise IngestError(f"The mail archive cannot be read ({exc}).") from None
    pieces: list[ChunkPiece] = []
    read = skipped = 0
    for key in keys:
        try:
            message = email.message_from_bytes(box.get_bytes(key), policy=email.policy.default)
            assert isinstance(message, EmailMessage)
            pieces.extend(_message_pieces(message, counter, max_tokens))
            read += 1
        except Exception:  # a message the parser cannot make sense of: the others still count
            skipped += 1
    box.close()
    if not pieces:
        raise IngestError("The mail archive holds no message with text to index.")
    note = f"{read} messages" + (f"; {skipped} could not be read" if skipped else "")
    return ConvertedDocument(title=path.name, pieces=tuple(pieces), remark=note)


def _message_pieces(message: EmailMessage, counter: TokenCounter, max_tokens: int) -> list[ChunkPiece]:
    subject = " ".join(str(message.get("Subject", "") or "").split()) or NO_SUBJECT
    header = "\n".join(
        f"{name}: {' '.join(str(message[name]).split())}" for name in ("From", "To", "Date") if message[name]
    )
    attachments = [part.get_filename() or "unnamed" for part in message.iter_attachments()]
    body = _body_text(message)
    text = "\n\n".join(
        part for part in (header, body, f"Attachments: {', '.join(attachments)}" if attachments else "") if part.strip()
    )
    return [
        ChunkPiece(text=piece.text, embed_text=f"{subject}\n{piece.text}", headings=(subject,))
        for piece in chunk_plain_text(text, counter, max_tokens)
    ]


def _body_text(message: EmailMessage) -> str:
    part = message.get_body(preferencelist=("plain", "html"))
    if part is None:
        return ""
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
        return payload.decode("utf-8", errors="replace") if isinstance(payload, bytes) else str(payload)
