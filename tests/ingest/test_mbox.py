"""An .mbox archive, written with Python's mailbox and email packages, indexed message by
message: each cited under its own subject, with sender and date, whatever its charset,
HTML-only or not, with its attachments named and read, and an unreadable charset not losing it."""

from __future__ import annotations

import json
import mailbox
import queue
import time
import types
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest

from app.cli import main
from app.ingest.embedder import OnnxMiniLMEmbedder


def _message(subject: str, sender: str, body: str, *, charset: str = "utf-8") -> EmailMessage:
    message = EmailMessage()
    message["From"] = sender
    message["To"] = "archive@harbour.example"
    message["Subject"] = subject
    message["Date"] = "Wed, 02 Dec 2026 08:30:00 +0000"
    message.set_content(body, charset=charset)
    return message


def make_archive(path: Path) -> None:
    plain = _message(
        "Tide tables", "Ana Berg <ana@harbour.example>", "The heliotrope buoy marks the channel."
    )
    latin = _message(
        "Grüße",
        "Jörg <jorg@harbour.example>",
        "Grüße aus Köln: the bergamot crates arrived.",
        charset="iso-8859-1",
    )
    html = EmailMessage()
    html["From"], html["Subject"] = "news@harbour.example", "Harbour news"
    html.set_content(
        "<html><body><p>The <b>samphire</b> harvest was early.</p></body></html>", subtype="html"
    )
    attached = _message(
        "Cargo manifest", "bo@harbour.example", "The lichen samples are listed in the manifest."
    )
    attached.add_attachment(
        b"crate 1: lichen\n", maintype="text", subtype="plain", filename="manifest.txt"
    )
    box = mailbox.mbox(str(path))
    try:
        for message in (plain, latin, html, attached):
            box.add(message)
        # a message that declares a charset no codec knows: read anyway, not lost
        box.add(
            b"From: odd@harbour.example\nSubject: Odd charset\nContent-Type: text/plain; charset=x-no-such-charset\n\n"
            b"The tamarisk hedge needs cutting.\n"
        )
        box.flush()
    finally:
        box.close()


def search(word: str, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    assert main(["search", word, "-c", "mail", "--mode", "bm25", "--top-k", "1", "--json"]) == 0
    (hit,) = json.loads(capsys.readouterr().out)
    return dict(hit)


def test_each_message_of_an_archive_is_found_under_its_subject(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = tmp_path / "mail" / "harbour.mbox"
    archive.parent.mkdir()
    make_archive(archive)
    assert main(["ingest", str(archive.parent), "--collection", "mail"]) == 0
    err = capsys.readouterr().err
    assert "chunks; 5 messages; 1 attachment read)" in err and "1 indexed" in err, err

    hit = search("heliotrope", capsys)
    assert hit["path"] == str(archive) and hit["headings"] == ["Tide tables"]
    assert "From: Ana Berg <ana@harbour.example>" in str(
        hit["text"]
    ) and "Date: Wed, 02 Dec 2026" in str(hit["text"])
    hit = search("bergamot", capsys)
    assert hit["headings"] == ["Grüße"] and "Grüße aus Köln" in str(hit["text"])
    hit = search("samphire", capsys)
    assert hit["headings"] == ["Harbour news"] and "The samphire harvest" in " ".join(
        str(hit["text"]).split()
    )
    assert "<b>" not in str(hit["text"])
    hit = search("samples", capsys)
    assert hit["headings"] == ["Cargo manifest"] and "Attachments: manifest.txt" in str(hit["text"])
    hit = search("crate", capsys)  # the attachment, read as its own source linked to the message
    assert hit["headings"] == ["Cargo manifest", "manifest.txt"] and hit["title"] == (
        "manifest.txt, attached to Cargo manifest — bo@harbour.example, 2 Dec 2026"
    )
    hit = search("tamarisk", capsys)
    assert hit["headings"] == ["Odd charset"]


def test_an_empty_archive_fails_with_a_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "mail"
    folder.mkdir()
    (folder / "empty.mbox").write_bytes(b"From nobody Wed Dec  2 08:30:00 2026\n\n")
    assert main(["ingest", str(folder), "--collection", "mail", "--quiet"]) == 1
    assert "empty.mbox: The mail holds no message with text to index." in capsys.readouterr().err


async def test_the_progress_says_which_message_of_an_archive_is_read(tmp_path: Path) -> None:
    from ingest_files import ingest_saying

    folder = tmp_path / "mail"
    folder.mkdir()
    make_archive(folder / "harbour.mbox")
    _, said = await ingest_saying(tmp_path / "home", folder, "mail")
    assert said and said[0] == "harbour.mbox: message 1 of 5", said
    assert all(s.startswith("harbour.mbox: message ") and s.endswith(" of 5") for s in said), said


class SlowListenerQueue(queue.SimpleQueue):  # type: ignore[type-arg]
    """The reports' queue on a busy machine: the listener thread gets each report a
    while after it was put, long after the conversion's result is back."""

    def get(self, block: bool = True, timeout: float | None = None) -> Any:
        item = super().get(block, timeout)
        if item is not None:
            time.sleep(0.3)
        return item


async def test_every_report_of_a_file_is_heard_before_its_result(
    tmp_path: Path, embedder: OnnxMiniLMEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.ingest.chunking import chunk_token_limit
    from app.ingest.convert import ConversionPool, ConverterConfig, worker_pool

    monkeypatch.setattr(worker_pool, "queue", types.SimpleNamespace(SimpleQueue=SlowListenerQueue))
    make_archive(tmp_path / "harbour.mbox")
    config = ConverterConfig(
        tokenizer_json=embedder.tokenizer.to_str(),
        max_tokens=chunk_token_limit(embedder.max_tokens, 256),
    )
    pool = ConversionPool(config, workers=1, kind="thread")
    heard: list[tuple[int, int, str]] = []
    try:
        outcome = await pool.convert(
            tmp_path / "harbour.mbox", on_page=lambda *report: heard.append(report)
        )
        assert outcome.document is not None, outcome.error
        assert heard and heard[0] == (1, 5, "message"), heard  # heard when the result is
    finally:
        pool.shutdown()
