"""Killing ``fathom`` at any step of any change to the library loses nothing.

Each case runs the real ``fathom`` command in a subprocess with
``FATHOM_TEST_CRASH_AT`` naming one step of ``app/store/ledger.py``; the
process kills itself with SIGKILL there, as a power cut or the OOM killer
would. Then Fathom starts again (opening the library finishes what the crash
left) and:

- every document the catalog lists as indexed is found by ``fathom search``
  with a sentence from it;
- ``fathom repair --check`` finds no chunk of an unlisted document and no
  indexed document missing a chunk (documents cut short are listed as
  pending, with no chunks);
- running the same command again finishes the work: the library is the one an
  uninterrupted run leaves.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from ingest_files import paths_in

from app.cli import main
from app.core.errors import StoreLocked
from app.core.settings import Settings
from app.ingest.library import Library
from app.store.ledger import STEPS

REPO = Path(__file__).resolve().parents[2]
COLLECTION = "crash"
FILES = (
    "about/limitations.md",
    "about/comparison.md",
    "fragments/installation_guide.md",
    "fragments/faq_normalize_embeddings.md",
    "reference/sys_config/configure_tls.md",
    "adminGuide/upgrade_milvus_embedded.md",
)
NEW_PARAGRAPH = (
    "\n\n## Field notes\n\nThe lighthouse keeper logged forty-two storm petrels "
    "circling the northern beacon during the equinox gale.\n"
)
NEW_FILE = (
    "Kelp forests off the western shelf grew eleven metres in a single summer, the survey found.\n"
)


@dataclass(frozen=True)
class Operation:
    name: str
    starts_from_indexed: bool  # runs on a library that already holds the corpus
    change_files: Callable[[Path], None]
    argv: Callable[[Path], list[str]]
    rerun_status: int  # exit status of the same command run again after the crash


def _no_change(docs: Path) -> None:
    pass


def _edit_files(docs: Path) -> None:
    """A changed file, a file emptied (now skipped), a deleted file and a new one."""
    with (docs / "limitations.md").open("a", encoding="utf-8") as handle:
        handle.write(NEW_PARAGRAPH)
    (docs / "installation_guide.md").write_text("", encoding="utf-8")
    (docs / "comparison.md").unlink()
    (docs / "kelp.md").write_text(NEW_FILE, encoding="utf-8")


OPERATIONS = {
    op.name: op
    for op in (
        Operation("ingest", False, _no_change, lambda d: ["ingest", str(d), "-c", COLLECTION], 0),
        Operation("rescan", True, _edit_files, lambda d: ["ingest", str(d), "-c", COLLECTION], 0),
        Operation(
            "remove-document",
            True,
            _no_change,
            # already removed by the restart's recovery: the re-run finds nothing to remove
            lambda d: ["remove", "-c", COLLECTION, "-d", str(d / "limitations.md"), "--yes"],
            1,
        ),
        # already removed by the restart's recovery: the re-run finds no such collection
        Operation(
            "remove-collection",
            True,
            _no_change,
            lambda d: ["remove", "-c", COLLECTION, "--yes"],
            2,
        ),
        Operation("reindex", True, _no_change, lambda d: ["reindex", "-c", COLLECTION], 0),
    )
}

# (operation, step, which occurrence of the step): every transition each operation goes through
CASES = [
    ("ingest", "collection.created", 1),
    ("ingest", "document.writing", 1),
    ("ingest", "document.chunks_written", 1),
    ("ingest", "document.durable", 1),
    ("ingest", "document.indexed", 1),
    ("rescan", "document.removing", 1),  # the deleted file
    ("rescan", "document.chunks_deleted", 1),
    ("rescan", "document.pending", 1),  # the emptied file, whose chunks must go
    ("rescan", "document.cleared", 1),
    ("rescan", "document.pending", 2),  # the changed file, before its old chunks go
    ("rescan", "document.cleared", 2),
    ("rescan", "document.writing", 1),
    ("rescan", "document.chunks_written", 1),
    ("rescan", "document.durable", 1),
    ("rescan", "document.indexed", 1),
    ("remove-document", "document.removing", 1),
    ("remove-document", "document.chunks_deleted", 1),
    ("remove-collection", "collection.removing", 1),
    ("remove-collection", "collection.dropped", 1),
    ("reindex", "collection.reset", 1),
    ("reindex", "document.writing", 1),
    ("reindex", "document.durable", 1),
]


def test_the_cases_cover_every_step_of_the_ledger() -> None:
    covered = {step for _, step, _ in CASES}
    # the ends of transitions ("…removed") are the same state as the start of the next one
    assert covered | {"document.removed", "collection.removed"} == set(STEPS)


# -- the library as files on disk --------------------------------------------------


@dataclass
class World:
    docs: Path  # the corpus, restored before each case (the catalog records absolute paths)
    pristine: Path  # an untouched copy of the corpus
    indexed_home: Path  # a FATHOM_HOME holding the whole corpus, copied for each case
    references: dict[str, dict[str, Any]]  # operation -> library after an uninterrupted run


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, shared_data: Path) -> Iterator[World]:
    root = tmp_path_factory.mktemp("kill")
    pristine = root / "pristine"
    for rel in FILES:
        source = shared_data / "milvus-docs" / rel
        pristine.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, pristine / source.name)
    docs = root / "docs"
    indexed_home = root / "indexed-home"
    _restore(docs, pristine)
    _fathom(indexed_home, ["ingest", str(docs), "-c", COLLECTION])
    yield World(docs=docs, pristine=pristine, indexed_home=indexed_home, references={})


def _restore(docs: Path, pristine: Path) -> None:
    shutil.rmtree(docs, ignore_errors=True)
    shutil.copytree(pristine, docs)


def _prepare(world: World, operation: Operation, home: Path) -> None:
    _restore(world.docs, world.pristine)
    if operation.starts_from_indexed:
        shutil.copytree(world.indexed_home, home)
    operation.change_files(world.docs)


def _fathom(home: Path, argv: list[str]) -> tuple[int, str]:
    """Run ``fathom ARGV`` in this process (as a user would in a terminal); (status, stdout)."""
    import contextlib
    import io

    previous = os.environ.get("FATHOM_HOME")
    os.environ["FATHOM_HOME"] = str(home)
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            status = main(argv)
    finally:
        if previous is None:
            os.environ.pop("FATHOM_HOME", None)
        else:
            os.environ["FATHOM_HOME"] = previous
    return status, out.getvalue()


def _kill_at(home: Path, argv: list[str], step: str, nth: int, log: Path) -> None:
    env = {
        **os.environ,
        "FATHOM_HOME": str(home),
        "PYTHONPATH": str(REPO),
        "FATHOM_TEST_CRASH_AT": f"{step}:{nth}",
    }
    with (
        log.open("w") as sink,
        subprocess.Popen(
            [sys.executable, "-m", "app", *argv],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=sink,
            start_new_session=True,
        ) as process,
    ):
        left: list[str] = []
        try:
            status = process.wait(timeout=600)
            left = _converters_left(process.pid)
        finally:
            try:
                os.killpg(
                    process.pid, signal.SIGKILL
                )  # whatever it left behind, whatever the assertions say
            except ProcessLookupError:
                pass
    assert status == -signal.SIGKILL, (
        f"fathom {' '.join(argv)} was not killed at {step}:{nth} (exit {status}): {log.read_text()[-800:]}"
    )
    assert left == [], f"conversion processes outlived fathom killed at {step}:{nth}: {left}"


ORPHANS_END_S = 15.0  # a converter checks for its parent every 0.5 s; the machine may be loaded


def _converters_left(group: int) -> list[str]:
    """The conversion processes (and their resource tracker) of the killed process's group
    still alive after ORPHANS_END_S: none may outlive it (issue 36)."""
    import time

    import psutil

    deadline = time.monotonic() + ORPHANS_END_S
    while True:
        left = []
        for candidate in psutil.process_iter(["pid", "cmdline"]):
            try:
                command = " ".join(candidate.info["cmdline"] or [])
                if os.getpgid(candidate.pid) == group and "multiprocessing" in command:
                    left.append(f"{candidate.pid}: {command[:120]}")
            except (ProcessLookupError, PermissionError, psutil.Error):
                continue
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.2)  # polling for them to end, not a fixed wait


# -- what the library holds ------------------------------------------------------------


LOCK_FREED_S = (
    30.0  # processes a killed Fathom forked (converter workers) may hold its lock until they exit
)


async def _open_when_free(home: Path) -> Library:
    """The library, once the killed process's lock is let go (its forked workers hold it
    a moment longer on a loaded machine); StoreLocked if it never is."""
    import asyncio
    import time

    deadline = time.monotonic() + LOCK_FREED_S
    while True:
        try:
            return Library.open(Settings(), paths_in(home))
        except StoreLocked:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)  # polling for the lock to be let go, not a fixed wait


def _state(home: Path, docs: Path) -> dict[str, Any]:
    """Documents (by path relative to the corpus), their chunk texts, and the check's drift."""
    import asyncio

    async def read() -> dict[str, Any]:
        library = await _open_when_free(home)
        try:
            collections = [c.name for c in await library.collections()]
            documents: dict[str, tuple[str, int, str, str]] = {}
            texts: dict[str, list[str]] = {}
            if COLLECTION in collections:
                for doc in await library.documents(COLLECTION):
                    rel = str(Path(doc.path).relative_to(docs))
                    documents[rel] = (
                        doc.status.value,
                        doc.chunk_count,
                        doc.content_hash,
                        doc.error,
                    )
                    ids = [f"{doc.doc_id}:{n:05d}" for n in range(doc.chunk_count)]
                    texts[rel] = [c.text for c in await library.get_chunks(ids)]
            check = await library.check()
            return {
                "collections": collections,
                "in_store": library.store.list_collections(),
                "documents": documents,
                "texts": texts,
                "drift": [(d.kind, d.count) for d in check.drift],
            }
        finally:
            await library.aclose()

    return asyncio.run(read())


def _sentence(texts: list[str]) -> str:
    """A sentence a person might remember from the document: its longest line, cut to 30 words."""
    lines = [line.strip() for text in texts for line in text.splitlines() if len(line.split()) >= 4]
    best = max(lines, key=len) if lines else texts[0]
    return " ".join(best.split()[:30])


def _assert_indexed_documents_are_found(home: Path, state: dict[str, Any]) -> None:
    indexed = [
        rel
        for rel, (status, chunks, _, _) in state["documents"].items()
        if status == "indexed" and chunks
    ]
    if not indexed:
        return
    queries = [_sentence(state["texts"][rel]) for rel in indexed]
    status, out = _fathom(home, ["search", *queries, "-c", COLLECTION, "--top-k", "10", "--json"])
    assert status == 0
    parsed = json.loads(out)
    results = [parsed] if len(queries) == 1 else [entry["hits"] for entry in parsed]
    for rel, hits in zip(indexed, results, strict=True):
        found = {Path(hit["path"]).name for hit in hits}
        assert Path(rel).name in found, (
            f"{rel} is listed as indexed but a sentence from it finds only {found}"
        )


def _reference(world: World, operation: Operation, tmp_path: Path) -> dict[str, Any]:
    if operation.name not in world.references:
        home = tmp_path / "reference-home"
        _prepare(world, operation, home)
        status, _ = _fathom(home, operation.argv(world.docs))
        assert status == 0
        world.references[operation.name] = _state(home, world.docs)
        shutil.rmtree(home)
    return world.references[operation.name]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("operation_name", "step", "nth"), CASES, ids=[f"{o}-{s}:{n}" for o, s, n in CASES]
)
def test_a_kill_at_this_step_loses_nothing(
    world: World, tmp_path: Path, operation_name: str, step: str, nth: int
) -> None:
    operation = OPERATIONS[operation_name]
    expected = _reference(world, operation, tmp_path)
    home = tmp_path / "home"
    _prepare(world, operation, home)
    argv = operation.argv(world.docs)

    _kill_at(home, argv, step, nth, tmp_path / "killed.log")

    # the next start: listed as indexed means searchable; no stray or missing chunks
    after_crash = _state(home, world.docs)
    _assert_indexed_documents_are_found(home, after_crash)
    assert all(kind == "unfinished" and count == 0 for kind, count in after_crash["drift"]), (
        after_crash["drift"]
    )
    assert sorted(after_crash["collections"]) == sorted(after_crash["in_store"])

    # the re-run finishes the work
    status, _ = _fathom(home, argv)
    assert status == operation.rerun_status
    final = _state(home, world.docs)
    assert final == expected
    _assert_indexed_documents_are_found(home, final)
