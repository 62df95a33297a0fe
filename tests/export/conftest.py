"""Fixtures for the export tests: a recorded hostile run, and a real run recorded by
``fathom ask`` (the real engine, the real starter model, real ingested documents)."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(scope="module")
def real_run(
    tmp_path_factory: pytest.TempPathFactory, shared_data: Path
) -> Iterator[tuple[Path, str]]:
    """(FATHOM_HOME, run id) of a finished run that ``fathom ask`` recorded over two Milvus
    doc pages ingested for real; the starter model writes it."""
    from app.commands import ask
    from app.core.events import IngestFinished
    from app.core.paths import app_paths
    from app.core.settings import Settings, replace_setting, save_settings
    from app.ingest.library import Library
    from app.store.research_runs import RunStore

    home = tmp_path_factory.mktemp("export-home")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("FATHOM_HOME", str(home))
        settings = replace_setting(Settings(), "model.llamacpp.n_threads", 1)  # a busy shared CPU
        save_settings(
            replace_setting(settings, "model.llamacpp.n_ctx", 4096), app_paths().settings_file
        )

        async def ingest() -> list[Any]:
            library = Library.open(Settings(), app_paths())
            files = [
                shared_data / "milvus-docs" / "about" / n for n in ("limitations.md", "overview.md")
            ]
            try:
                return [event async for event in library.ingest(files, "docs")]
            finally:
                await library.aclose()

        done = asyncio.run(ingest())
        assert isinstance(done[-1], IngestFinished) and done[-1].indexed == 2, done[-1]
        parser = argparse.ArgumentParser()
        ask.add_arguments(parser)
        question = "What is the maximum length of a collection name?"  # the starter cites a source
        code = ask.run(parser.parse_args([question, "--mode", "quick", "--max-seconds", "300"]))
        assert code == 0
        store = RunStore.open(app_paths())
        try:
            runs = store.list_runs()
        finally:
            store.close()
    assert len(runs) == 1 and runs[0].status == "finished", runs
    yield home, runs[0].run_id
