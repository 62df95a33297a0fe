"""Mail as sources: each message cited by its subject, sender and date; its attachments
read by the same converter as any file (text, PDF with pages, Word, a forwarded mail)
and cited as their own sources linked to the message; attachments Fathom cannot read
named in the document's note; malformed messages read as far as they go and named,
the rest of the archive indexed. Messages are written with Python's email package,
attachments with reportlab and python-docx."""

from __future__ import annotations

import io
import json
import mailbox
from email.message import EmailMessage
from pathlib import Path

import pytest

from app.cli import main
from app.ingest.convert.converter import Converter
from tests.scanned_files import text_pdf

DATE = "Wed, 02 Dec 2026 08:30:00 +0000"
LABEL = "Cargo manifest — Bo Lind, 2 Dec 2026"


def _docx_bytes(text: str) -> bytes:
    import docx

    document = docx.Document()
    document.add_paragraph(text)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def letter_with_attachments() -> EmailMessage:
    message = EmailMessage()
    message["From"] = "Bo Lind <bo@harbour.example>"
    message["To"] = "Ana Berg <ana@harbour.example>"
    message["Cc"] = "office@harbour.example"
    message["Subject"] = "Cargo manifest"
    message["Date"] = DATE
    message.set_content(
        "The manifest and the survey are attached; the cormorant crates left on Monday."
    )
    message.add_attachment(
        b"crate 7 holds the marjoram seedlings\n",
        maintype="text",
        subtype="plain",
        filename="notes.txt",
    )
    first_page = tuple(
        f"Line {n} of the quay survey lists the bollards, the cleats and the ladders."
        for n in range(17)
    )
    survey = text_pdf(
        (first_page, (*first_page, "The larkspur bales were stacked by the crane."))
    )  # a chunk a page
    message.add_attachment(survey, maintype="application", subtype="pdf", filename="survey.pdf")
    memo = _docx_bytes("The memo says the bryony shipment is insured.")
    message.add_attachment(
        memo,
        maintype="application",
        subtype="vnd.openxmlformats-officedocument.wordprocessingml.document",
        filename="memo.docx",
    )
    forwarded = EmailMessage()
    forwarded["From"] = "Harbour Master <master@harbour.example>"
    forwarded["Subject"] = "Pilot schedule"
    forwarded["Date"] = "Tue, 01 Dec 2026 07:00:00 +0000"
    forwarded.set_content("The quillwort pilot boat sails at dawn.")
    message.add_attachment(forwarded)  # message/rfc822: a mail attached to the mail
    message.add_attachment(
        b"MZ\x90\x00 not a program to run",
        maintype="application",
        subtype="octet-stream",
        filename="tool.exe",
    )
    message.add_attachment(
        b"%PDF-1.4 cut short", maintype="application", subtype="pdf", filename="torn.pdf"
    )
    return message


def malformed_archive(path: Path) -> None:
    good = EmailMessage()
    good["From"], good["Subject"], good["Date"] = "ana@harbour.example", "Tide tables", DATE
    good.set_content("The heliotrope buoy marks the channel.")
    box = mailbox.mbox(str(path))
    try:
        box.add(good)
        # declares parts but none ever starts: its text must still be found
        box.add(
            b"From: clerk@harbour.example\nSubject: Broken parts\nContent-Type: multipart/mixed; boundary=XYZ\n\n"
            b"The juniper ledger is missing its boundaries.\n"
        )
        # a body whose base64 is damaged at its end
        box.add(
            b"From: clerk@harbour.example\nSubject: Bad encoding\nContent-Type: text/plain\n"
            b"Content-Transfer-Encoding: base64\n\nVGhlIHRhbnN5IHJvdyBpcyBkdWcu!!=\n"
        )
        box.flush()
    finally:
        box.close()


def search(word: str, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    assert main(["search", word, "-c", "mail", "--mode", "bm25", "--top-k", "1", "--json"]) == 0
    (hit,) = json.loads(capsys.readouterr().out)
    return dict(hit)


def test_a_message_and_its_attachments_are_cited_as_linked_sources(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "mail"
    folder.mkdir()
    letter = folder / "manifest.eml"
    letter.write_bytes(bytes(letter_with_attachments()))
    assert main(["ingest", str(folder), "--collection", "mail"]) == 0
    err = capsys.readouterr().err
    assert "1 indexed" in err, err
    assert "4 attachments read" in err, err
    assert "attachment torn.pdf of “Cargo manifest” not read:" in err, err

    hit = search("cormorant", capsys)  # the message itself: its label, its headers first
    assert (
        hit["path"] == str(letter)
        and hit["title"] == LABEL
        and hit["headings"] == ["Cargo manifest"]
    )
    text = str(hit["text"])
    assert text.startswith(
        "From: Bo Lind <bo@harbour.example>\nTo: Ana Berg <ana@harbour.example>\n"
    )
    assert "Cc: office@harbour.example" in text and "Date: Wed, 02 Dec 2026" in text
    assert (
        "Attachments: notes.txt, survey.pdf, memo.docx, Pilot schedule.eml, tool.exe, torn.pdf"
        in text
    )

    hit = search("marjoram", capsys)
    assert hit["path"] == str(letter) and hit["title"] == f"notes.txt, attached to {LABEL}"
    assert hit["headings"][:2] == ["Cargo manifest", "notes.txt"]  # type: ignore[index]
    hit = search("larkspur", capsys)  # a PDF attachment keeps its pages
    assert hit["title"] == f"survey.pdf, attached to {LABEL}" and hit["page"] == 2
    hit = search("bryony", capsys)
    assert hit[
        "title"
    ] == f"memo.docx, attached to {LABEL}" and "bryony shipment is insured" in str(hit["text"])
    hit = search("quillwort", capsys)  # the forwarded mail, read as a mail
    assert hit["title"] == f"Pilot schedule.eml, attached to {LABEL}"
    assert "From: Harbour Master <master@harbour.example>" in str(hit["text"])
    assert main(["search", "MZ", "-c", "mail", "--mode", "bm25", "--json"]) == 0
    assert all("not a program" not in str(h["text"]) for h in json.loads(capsys.readouterr().out))


def test_malformed_messages_are_read_as_far_as_they_go_and_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "mail"
    folder.mkdir()
    archive = folder / "clerk.mbox"
    malformed_archive(archive)
    assert main(["ingest", str(folder), "--collection", "mail"]) == 0
    err = capsys.readouterr().err
    assert "3 messages" in err, err
    assert "“Broken parts” is malformed (start boundary not found" in err, err
    assert "“Bad encoding” is malformed (invalid base64" in err, err
    assert "“Tide tables” is malformed" not in err, err

    assert search("heliotrope", capsys)["title"] == "Tide tables — ana@harbour.example, 2 Dec 2026"
    hit = search("juniper", capsys)
    assert hit["headings"] == ["Broken parts"] and "juniper ledger is missing" in str(hit["text"])
    assert search("tansy", capsys)["headings"] == ["Bad encoding"]


def test_a_message_that_cannot_be_read_is_named_and_the_others_kept(
    tmp_path: Path, converter: Converter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Control flow: a message the reader raises on (here its body cannot be had) is
    named in the note; the archive's other messages are still read."""
    from app.ingest.convert import mail_files

    archive = tmp_path / "clerk.mbox"
    malformed_archive(archive)
    real_body = mail_files._body_text

    def body_or_fail(message: EmailMessage) -> str:
        if message["Subject"] == "Bad encoding":
            raise ValueError("no body to be had")
        return real_body(message)

    monkeypatch.setattr(mail_files, "_body_text", body_or_fail)
    read = converter.convert(archive)
    assert (
        read.note.startswith("2 messages; ")
        and "message 3 could not be read (no body to be had)" in read.note
    )
    assert {piece.headings for piece in read.pieces} == {("Tide tables",), ("Broken parts",)}


def test_pictures_the_html_shows_inline_are_layout_not_attachments(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A signature's logo (referenced as cid: from the HTML) is neither listed nor read by
    OCR; a real attachment of the same message still is."""
    from PIL import Image

    logo = io.BytesIO()
    Image.new("RGB", (120, 40), "white").save(logo, format="PNG")
    message = EmailMessage()
    message["From"], message["Subject"], message["Date"] = "ana@harbour.example", "Quay rota", DATE
    message.set_content(
        "<html><body><p>The saffron rota is attached.</p><img src='cid:logo1@harbour'></body></html>",
        subtype="html",
    )
    message.add_related(
        logo.getvalue(),
        maintype="image",
        subtype="png",
        cid="<logo1@harbour>",
        filename="image001.png",
    )
    # a multipart/related message, as some mailers write it: the body, its logo and a file side by side
    message.add_related(
        b"Rota: the cassia crew works Tuesday.\n",
        maintype="text",
        subtype="plain",
        filename="rota.txt",
        disposition="attachment",
    )
    assert message.get_content_type() == "multipart/related"
    folder = tmp_path / "mail"
    folder.mkdir()
    (folder / "rota.eml").write_bytes(bytes(message))
    assert main(["ingest", str(folder), "--collection", "mail"]) == 0
    err = capsys.readouterr().err
    assert "(2 chunks; 1 attachment read)" in err and "image001" not in err, err
    hit = search("saffron", capsys)
    assert "Attachments: rota.txt" in str(hit["text"]) and "image001" not in str(hit["text"])
    assert (
        search("cassia", capsys)["title"]
        == "rota.txt, attached to Quay rota — ana@harbour.example, 2 Dec 2026"
    )
