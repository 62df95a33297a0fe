"""The library panel's "Re-scan, reading again the files given up on": a file the
converter gave up on (past the memory per file) is not read by a plain re-scan, and is
read again by this one (issue 33)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from helpers import await_in_test
from hostile_corpus import flate_bomb_pdf

from app.core.paths import app_paths
from app.core.settings import Settings, replace_setting
from app.ingest.convert.limits import TOO_MUCH_MEMORY
from app.ingest.embedder import OnnxMiniLMEmbedder
from app.ingest.library import Library
from app.ui.library_panel import LibraryPanel


def test_retry_reads_again_a_file_a_plain_rescan_leaves(
    qtbot: Any, panel: LibraryPanel, tmp_path: Path
) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "bomb.pdf").write_bytes(flate_bomb_pdf(256))
    (folder / "tides.md").write_text(
        "# Tides\n\nThe spring tide peaks at 5.2 metres.\n", encoding="utf-8"
    )
    settings = replace_setting(Settings(), "ingest.memory_per_file_mb", 768)
    library = Library.open(settings, app_paths().ensure(), embedder=OnnxMiniLMEmbedder())
    read: list[str] = []
    pool = library._converter_pool()
    convert = pool.convert

    async def recording(path: Path, on_page: Any = None) -> Any:
        read.append(path.name)
        return await convert(path, on_page)

    pool.convert = recording  # type: ignore[method-assign]
    panel.set_library(library)
    try:
        with qtbot.waitSignal(panel.controller.ingestFinished, timeout=300_000):
            panel.add_paths([folder])
        qtbot.waitUntil(lambda: not panel.controller.ingesting, timeout=10_000)
        (bomb,) = [
            d
            for d in await_in_test(qtbot, library.documents("notes"))
            if d.path.endswith("bomb.pdf")
        ]
        assert bomb.error.startswith(TOO_MUCH_MEMORY) and sorted(read) == ["bomb.pdf", "tides.md"]

        read.clear()
        qtbot.waitUntil(lambda: panel.collection_index("notes").isValid(), timeout=10_000)
        panel.select(panel.collection_index("notes"))
        with qtbot.waitSignal(panel.controller.ingestFinished, timeout=300_000):
            panel.rescan_action.trigger()
        qtbot.waitUntil(lambda: not panel.controller.ingesting, timeout=10_000)
        assert read == []

        assert panel.retry_action.isEnabled()
        with qtbot.waitSignal(panel.controller.ingestFinished, timeout=300_000):
            panel.retry_action.trigger()
        qtbot.waitUntil(lambda: not panel.controller.ingesting, timeout=10_000)
        assert read == ["bomb.pdf"]
    finally:
        qtbot.waitUntil(lambda: not panel._tasks.running(), timeout=60_000)
        panel.set_library(None)
        await_in_test(qtbot, library.aclose())
