"""What the scan lets through, and the reason it gives for everything else."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.ingest.scan import LINK_OUTSIDE, OWN_FOLDER, scan


def _reasons(result: object) -> dict[str, str]:
    return {Path(s.path).name: s.reason for s in result.skipped}  # type: ignore[attr-defined]


def test_scan_keeps_documents_and_explains_the_rest(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A\n\ntext\n", encoding="utf-8")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.txt").write_text("plain\n", encoding="utf-8")
    (tmp_path / ".hidden.md").write_text("secret\n", encoding="utf-8")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config.txt").write_text("x\n", encoding="utf-8")
    (tmp_path / "song.mp3").write_bytes(b"ID3....")
    (tmp_path / "big.txt").write_bytes(b"x" * (2 * 1024 * 1024 + 1))
    os.symlink(tmp_path, tmp_path / "sub" / "loop")  # points back up: a loop
    os.symlink("selfie", tmp_path / "selfie")  # points to itself
    os.symlink(tmp_path / "missing.md", tmp_path / "dangling.md")
    bad_name = os.fsencode(tmp_path) + b"/caf\xe9.md"
    with open(bad_name, "wb") as handle:
        handle.write(b"# Cafe\n")

    result = scan([tmp_path], max_file_mb=2)

    assert [f.path.name for f in result.files] == ["a.md", "b.txt"]
    reasons = _reasons(result)
    assert "Hidden file" in reasons[".hidden.md"]
    assert "Hidden folder" in reasons[".git"]
    assert "config.txt" not in reasons  # a hidden folder is skipped whole
    assert "does not read '.mp3'" in reasons["song.mp3"]
    assert "over the 2 MB limit" in reasons["big.txt"]
    assert "symbolic link loop" in reasons["loop"]
    assert "symbolic link loop" in reasons["selfie"]
    assert "broken symbolic link" in reasons["dangling.md"]
    assert "not valid UTF-8" in reasons["caf\\xe9.md"]


def test_a_file_given_twice_or_through_a_link_is_scanned_once(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    target = tmp_path / "docs" / "a.md"
    target.write_text("# A\n", encoding="utf-8")
    os.symlink(target, tmp_path / "docs" / "link-to-a.md")
    result = scan([tmp_path / "docs", target], max_file_mb=10)
    assert len(result.files) == 1
    assert [(Path(s.path).name, s.reason) for s in result.skipped] == [
        ("link-to-a.md", f"The same file as {target}; indexed once.")
    ]


def test_of_two_names_of_one_file_the_readable_one_is_indexed(tmp_path: Path) -> None:
    """``alias.dat -> notes.txt`` and a hard link ``notes.bak``: the .dat name sorted first and
    hid notes.txt, which was never indexed nor mentioned."""
    notes = tmp_path / "notes.txt"
    notes.write_text("The wombat ledger.\n", encoding="utf-8")
    os.link(notes, tmp_path / "notes.bak")
    os.symlink(notes, tmp_path / "alias.dat")
    result = scan([tmp_path], max_file_mb=10)
    assert [f.path.name for f in result.files] == ["notes.txt"]
    reasons = _reasons(result)
    assert (
        "does not read '.dat'" in reasons["alias.dat"]
        and "does not read '.bak'" in reasons["notes.bak"]
    )


def test_a_link_pointing_outside_the_folder_is_not_followed_unless_asked(tmp_path: Path) -> None:
    """A link in the folder to a folder elsewhere holding secret.txt was followed without a word."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "secret.txt").write_text("the launch codes\n", encoding="utf-8")
    (tmp_path / "outside.md").write_text("# Out\n", encoding="utf-8")
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "sub" / "inside.md").write_text("# In\n", encoding="utf-8")
    os.symlink(elsewhere, docs / "to-elsewhere")
    os.symlink(tmp_path / "outside.md", docs / "outside-link.md")
    os.symlink(docs / "sub", docs / "to-sub")  # inside: followed (its file once)

    result = scan([docs], max_file_mb=10)
    assert [f.path.name for f in result.files] == ["inside.md"]
    reasons = _reasons(result)
    assert reasons["outside-link.md"] == reasons["to-elsewhere"] == LINK_OUTSIDE
    assert (
        reasons["to-sub"] != LINK_OUTSIDE
    )  # inside the folder: followed (and its folder scanned once)

    followed = scan([docs], max_file_mb=10, links_outside=True)
    assert sorted(f.path.name for f in followed.files) == [
        "inside.md",
        "outside-link.md",
        "secret.txt",
    ]
    # a link given as the folder itself is followed: the user named it
    os.symlink(elsewhere, tmp_path / "named-link")
    assert [f.path.name for f in scan([tmp_path / "named-link"], max_file_mb=10).files] == [
        "secret.txt"
    ]


def test_a_missing_path_is_reported(tmp_path: Path) -> None:
    result = scan([tmp_path / "nowhere"], max_file_mb=10)
    assert result.files == []
    assert result.skipped[0].reason == "The path does not exist."


def test_fathom_s_own_folders_and_other_libraries_are_never_indexed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Enter in a folder picker once indexed a FATHOM_HOME's parent: its catalog, its
    search index and its exported reports with it."""
    home = tmp_path / "fathom-home"
    monkeypatch.setenv("FATHOM_HOME", str(home))
    for folder, name in (
        ("data", "catalog.sqlite"),
        ("data/exports", "report.md"),
        ("config", "notes.md"),
        ("cache", "page.md"),
    ):
        (home / folder).mkdir(parents=True, exist_ok=True)
        (home / folder / name).write_text("# Fathom's own\n", encoding="utf-8")
    other = tmp_path / "old-library"  # another Fathom library's data folder
    other.mkdir()
    for name in ("catalog.sqlite", "milvus.db"):
        (other / name).write_bytes(b"")
    (other / "exports.md").write_text("# an export\n", encoding="utf-8")
    (tmp_path / "notes.md").write_text("# Mine\n", encoding="utf-8")

    result = scan([tmp_path], max_file_mb=2)
    assert [f.path.name for f in result.files] == ["notes.md"]
    reasons = _reasons(result)
    assert {reasons[name] for name in ("data", "config", "cache", "old-library")} == {OWN_FOLDER}
    # given directly, or a file inside: refused the same
    inside = scan([home / "data" / "exports", home / "config" / "notes.md"], max_file_mb=2)
    assert inside.files == [] and {s.reason for s in inside.skipped} == {OWN_FOLDER}


def test_a_home_folder_or_a_disk_s_root_is_broad(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.ingest.folder_size import is_broad

    homes = tmp_path / "home"
    for name in ("ana", "bob"):
        (homes / name / "papers").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(homes / "ana"))
    assert is_broad(homes / "ana") and is_broad(homes / "bob") and is_broad(Path("/"))
    assert not is_broad(homes / "ana" / "papers") and not is_broad(tmp_path)
    monkeypatch.setenv(
        "HOME", "/root"
    )  # a home at the top of the disk: its neighbours are not homes
    assert is_broad(Path("/root")) and not is_broad(tmp_path.parents[len(tmp_path.parents) - 2])
