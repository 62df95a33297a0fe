"""CSV read by Fathom itself (app/ingest/convert/csv_files.py): the same chunks as
Docling's CSV reader on real files of every shape, a bad file said in a sentence."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path

import pytest

from app.core.errors import IngestError
from app.ingest.convert import Converter

CSV_FILES: dict[str, bytes] = {
    "quoted.csv": (
        b'Name,Description,Amount,Note\n"Smith, John","Line one\nline two",12.5,a|b\n'
        b'Jane,  spaced   out  ,,\n"Quote ""here""",`code  span`,7,\nShort\n'
    ),
    "semicolons.csv": "Nom;Prix\nCafé crème;3,50 €\nPère Noël;10\n".encode("cp1252"),
    "czech.csv": "Název,Cena\nPříliš žluťoučký kůň,3\n".encode("cp1250"),
    "tabs.csv": b"a\tb\tc\n1\t2\t3\n4\t5\t6\n",
    "one_column.csv": b"word\nalpha\nbeta\n\ngamma\n",
    "bom.csv": "\ufeffcol1,col2\nx,y\n".encode(),
    "html.csv": b'name,desc\nA,"<b>bold</b> and <br/>break &amp; more"\nB,List<String> stays\n',
    "quoted_header.csv": b'"Name, full","Multi\nline header",c\n1,2,3\n',
    "crlf.csv": b"a,b\r\n1,2\r\n3,4\r\n",
    "colons.csv": b"time:value\n10:20\n",
    "wide.csv": (
        ",".join(f"col{i}" for i in range(60))
        + "\n"
        + ",".join(f"value number {i} with some words" for i in range(60))
    ).encode(),
    "long.csv": (
        "id,name,city,amount,notes\n"
        + "".join(
            f"{i},Name {i},City {i * 7 % 500},{i * 3.7:.2f},some note about row {i}\n"
            for i in range(3000)
        )
    ).encode(),
}


@pytest.mark.parametrize("name", sorted(CSV_FILES))
def test_csv_chunks_are_docling_s(converter: Converter, tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_bytes(CSV_FILES[name])
    ours = converter.convert(path)
    with (
        pytest.warns(UserWarning) if name == "quoted.csv" else nullcontext()
    ):  # Docling warns of ragged rows
        theirs = converter._docling.convert(path)  # Docling's own CSV reader, for reference
    assert [p.text for p in ours.pieces] == [p.text for p in theirs.pieces]
    assert [p.embed_text for p in ours.pieces] == [p.embed_text for p in theirs.pieces]
    assert [(p.headings, p.page) for p in ours.pieces] == [
        (p.headings, p.page) for p in theirs.pieces
    ]
    assert (ours.title, ours.pages) == (theirs.title, theirs.pages)
    assert len(ours.pieces) >= (2 if name in {"long.csv", "wide.csv"} else 1)


def test_a_long_table_is_cut_between_rows_with_its_header(
    converter: Converter, tmp_path: Path
) -> None:
    path = tmp_path / "long.csv"
    path.write_bytes(CSV_FILES["long.csv"])
    pieces = converter.convert(path).pieces
    header = "| id | name | city | amount | notes |\n| - | - | - | - | - |\n"
    assert len(pieces) > 10 and all(p.text.startswith(header) for p in pieces)
    rows = [line for p in pieces for line in p.text.split("\n")[2:]]
    assert rows == [
        f"| {i} | Name {i} | City {i * 7 % 500} | {i * 3.7:.2f} | some note about row {i} |"
        for i in range(3000)
    ]


@pytest.mark.parametrize(
    ("content", "sentence"),
    [
        (
            b'a,b\n1,"unclosed\n2,3\n',
            "The CSV file could not be read: unexpected end of data (line 3).",
        ),
        (b"\n\n,,\n", "The file has no text to index."),
        (b"\x00\x01\x02\x03" * 50, "looks binary"),
    ],
)
def test_a_bad_csv_is_said_in_a_sentence(
    converter: Converter, tmp_path: Path, content: bytes, sentence: str
) -> None:
    path = tmp_path / "bad.csv"
    path.write_bytes(content)
    with pytest.raises(IngestError) as caught:
        converter.convert(path)
    assert sentence in str(caught.value)
