"""The ingest, collections, search and remove commands, as a user types them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from app.cli import main
from app.core.paths import app_paths
from app.store.lock import acquire_instance_lock


def _docs(folder: Path, shared_data: Path) -> Path:
    folder.mkdir()
    shutil.copyfile(
        shared_data / "milvus-docs" / "userGuide" / "manage-partitions.md", folder / "partitions.md"
    )
    (folder / "kelp.txt").write_text(
        "Kelp forests grow up to half a metre a day.\n", encoding="utf-8"
    )
    (folder / "broken.pdf").write_bytes(b"%PDF-1.7\nnot really")
    return folder


def test_ingest_search_collections_remove(
    tmp_path: Path, shared_data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = _docs(tmp_path / "docs", shared_data)

    assert (
        main(["ingest", str(docs), "--collection", "milvus", "--description", "Milvus guides"]) == 0
    )
    err = capsys.readouterr().err
    assert "Collection 'milvus': 2 indexed" in err and "1 failed" in err
    assert f"{docs / 'broken.pdf'}: The PDF is damaged" in err  # the reason, in the summary

    assert main(["collections", "--json"]) == 0
    (listed,) = json.loads(capsys.readouterr().out)
    assert (listed["name"], listed["documents"], listed["description"]) == (
        "milvus",
        2,
        "Milvus guides",
    )
    assert listed["chunks"] > 10 and listed["embedding_model"] == "all-MiniLM-L6-v2-onnx-int8"
    assert main(["collections"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split()[:3] == ["NAME", "DOCUMENTS", "CHUNKS"] and table[1].startswith("milvus")

    assert main(["search", "how do I create a partition", "--collection", "milvus"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("1. [") and "partitions.md" in out and "Manage Partitions > " in out
    for mode in ("dense", "bm25", "hybrid"):
        assert (
            main(
                [
                    "search",
                    "kelp forest growth",
                    "-c",
                    "milvus",
                    "--mode",
                    mode,
                    "--top-k",
                    "2",
                    "--json",
                ]
            )
            == 0
        )
        hits = json.loads(capsys.readouterr().out)
        assert 1 <= len(hits) <= 2 and hits[0]["path"] == str(docs / "kelp.txt"), mode

    assert main(["search", "anything", "--collection", "nope"]) == 2
    assert "There is no collection named 'nope'" in capsys.readouterr().err
    assert main(["search", "kelp", "  ", "-c", "milvus"]) == 2  # an empty query is not searched
    empty = capsys.readouterr()
    assert "A query is empty" in empty.err and empty.out == ""

    assert (
        main(["remove", "--collection", "milvus", "--document", str(docs / "kelp.txt"), "--yes"])
        == 0
    )
    assert main(["search", "kelp forest growth", "-c", "milvus", "--mode", "bm25", "--json"]) == 0
    assert all(h["path"] != str(docs / "kelp.txt") for h in json.loads(capsys.readouterr().out))

    assert main(["remove", "--collection", "milvus"]) == 1  # no terminal to confirm on, no --yes
    assert "confirm with --yes" in capsys.readouterr().err
    assert main(["remove", "--collection", "milvus", "--yes"]) == 0
    assert main(["collections", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_nothing_indexable_exits_non_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "empty.md").write_bytes(b"")
    (folder / "song.mp3").write_bytes(b"ID3")
    assert main(["ingest", str(folder), "--collection", "empty"]) == 1
    out, err = capsys.readouterr()
    assert "Ingesting 2 files into 'empty'." in out + err
    assert "Nothing could be indexed." in err
    assert "song.mp3: Fathom does not read '.mp3' files." in err
    assert main(["ingest", str(folder / "empty.md"), "--collection", "empty"]) == 1
    out, err = capsys.readouterr()
    assert "Ingesting 1 file into 'empty'." in out + err
    assert main(["ingest", str(folder / "nope"), "-c", "test"]) == 1
    capsys.readouterr()
    assert main(["collections", "--json"]) == 0
    assert (
        json.loads(capsys.readouterr().out) == []
    )  # nothing went in: no empty collection is left behind


def test_the_window_s_names_are_the_command_line_s(
    tmp_path: Path, shared_data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = _docs(tmp_path / "milvus-docs", shared_data)
    assert (
        main(["ingest", str(docs)]) == 0
    )  # no --collection: named after the folder, as the window names it
    err = capsys.readouterr().err
    assert "Collection: milvus_docs" in err and "Collection 'milvus_docs': 2 indexed" in err
    for spelling in (
        "milvus-docs",
        "Milvus Docs",
        "milvus_docs",
    ):  # the folder's spelling is the collection's
        assert main(["search", "kelp forest growth", "-c", spelling, "--json"]) == 0, spelling
        assert json.loads(capsys.readouterr().out)[0]["path"] == str(docs / "kelp.txt")
    assert (
        main(["ingest", str(docs / "kelp.txt"), "-c", "milvus-docs"]) == 0
    )  # into the same collection
    assert (
        "Collection 'milvus_docs': 0 indexed (0 new chunks), 1 unchanged" in capsys.readouterr().err
    )
    assert main(["remove", "-c", "milvus-docs", "--yes"]) == 0
    assert main(["collections", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_a_locked_library_gives_a_sentence_not_a_traceback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with acquire_instance_lock(app_paths().ensure()):
        assert main(["search", "x", "--collection", "c"]) == 2
        assert main(["ingest", "nowhere", "--collection", "c"]) == 2
        assert main(["collections"]) == 0  # reads the catalog read-only: no lock needed
    err = capsys.readouterr().err
    assert err.count("This library is already open by another Fathom window.") == 2
    assert "Traceback" not in err


def test_the_summary_counts_skipped_files_and_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "kelp.txt").write_text(
        "Kelp forests grow up to half a metre a day.\n", encoding="utf-8"
    )
    (folder / "song.mp3").write_bytes(b"ID3")
    (folder / "setup.exe").write_bytes(b"MZ")
    (folder / ".secret.txt").write_text("hidden\n", encoding="utf-8")
    assert main(["ingest", str(folder), "--collection", "mixed", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "1 indexed" in err
    assert "3 skipped (2 not a format Fathom reads, 1 hidden), 0 failed" in err
    # each skipped file is listed with its reason
    assert "song.mp3: Fathom does not read '.mp3' files." in err
    assert "setup.exe: Fathom does not read '.exe' files." in err
    assert ".secret.txt: Hidden file; Fathom skips hidden items." in err

    (folder / "song.mp3").unlink()
    (folder / ".secret.txt").unlink()
    assert main(["ingest", str(folder), "--collection", "mixed", "--quiet"]) == 0
    assert (
        "0 indexed (0 new chunks), 1 unchanged, 1 skipped (not a format Fathom reads)"
        in capsys.readouterr().err
    )


def test_a_home_folder_or_thousands_of_files_need_yes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    many = tmp_path / "downloads"
    many.mkdir()
    for i in range(3_001):
        (many / f"n{i}.txt").write_text("x\\n", encoding="utf-8")
    assert main(["ingest", str(many)]) == 1  # no terminal to ask on: said, nothing indexed
    err = capsys.readouterr().err
    assert f"Index {many}? It holds 3,001 files" in err and "add --yes" in err
    home = tmp_path / "home"
    home.mkdir()
    (home / "note.md").write_text("# Kelp\\n\\nKelp forests grow fast.\\n", encoding="utf-8")
    monkeypatch.setenv("HOME", str(home))
    assert main(["ingest", str(home), "-c", "mine"]) == 1
    assert f"Index your home folder {home}?" in capsys.readouterr().err
    assert main(["collections", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []  # asked, not answered: nothing made
    assert main(["ingest", str(home), "-c", "mine", "--yes"]) == 0
    assert "Collection 'mine': 1 indexed" in capsys.readouterr().err
