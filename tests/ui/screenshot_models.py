"""Screenshots of the model manager and the first-run dialog for README (not a test).

    QT_QPA_PLATFORM=offscreen python tests/ui/screenshot_models.py OUT_DIR [GGUF]

The scene: the built-in catalog, the starter in use, GGUF (when given, e.g. a
Qwen2.5-0.5B file) in a GPT4All folder of a throw-away home, and Qwen3 4B downloading
from a loopback mirror (``HF_ENDPOINT``) that sends bytes slowly — the screenshot is
taken mid-download; the download is then cancelled. Nothing leaves the machine.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: file_server


def main(out: Path, gguf: Path | None) -> None:
    from file_server import FileServer

    root = Path(tempfile.mkdtemp(prefix="fathom-shots-"))
    home = root / "home"
    if gguf is not None:
        target = home / ".local" / "share" / "nomic.ai" / "GPT4All" / gguf.name
        target.parent.mkdir(parents=True)
        os.link(gguf, target) if gguf.stat().st_dev == target.parent.stat().st_dev else shutil.copy(
            gguf, target
        )
    os.environ.update(HOME=str(home), FATHOM_HOME=str(root / "fathom"), QT_QPA_PLATFORM="offscreen")
    os.environ.pop("XDG_DATA_HOME", None)
    served = FileServer().start()
    # the catalog's size, nothing on disk: the mirror only has to start sending
    sparse = root / "sparse.bin"
    with sparse.open("wb") as handle:
        handle.truncate(2_497_280_256)
    served.add(
        "/Qwen/Qwen3-4B-GGUF/resolve/main/Qwen3-4B-Q4_K_M.gguf", sparse, delay_per_chunk_s=0.002
    )
    os.environ["HF_ENDPOINT"] = served.url("")
    try:
        _scene(out)
    finally:
        served.stop()
        shutil.rmtree(root, ignore_errors=True)


def _scene(out: Path) -> None:
    import qasync
    from PySide6.QtWidgets import QApplication

    from app.core.paths import app_paths
    from app.core.settings import Settings, replace_setting
    from app.llm.starter import starter_model_path
    from app.ui.model_downloads import ModelDownloads
    from app.ui.model_manager import ModelManagerDialog
    from app.ui.services import Services
    from app.ui.setup_dialog import SetupDialog
    from app.ui.tasks import TaskKeeper
    from app.ui.theme import apply_theme

    app = QApplication.instance() or QApplication([])
    apply_theme(app, "light")
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)

    async def shoot() -> None:
        settings = replace_setting(Settings(), "model.ollama.host", "http://127.0.0.1:9")
        services = Services(settings, app_paths().ensure())
        tasks = TaskKeeper(lambda name, exc: print(f"{name}: {exc}", file=sys.stderr))
        downloads = ModelDownloads(tasks, lambda: services.paths.models_dir, lambda: services.settings,
                                   services.save_settings)  # fmt: skip
        setup = SetupDialog(services, tasks, starter=starter_model_path(), downloads=downloads)
        setup.show()
        await setup.recommend_task
        await setup.probe_task
        await asyncio.sleep(0.3)
        setup.grab().save(str(out / "screenshot-first-run.png"))
        setup.close()
        manager = ModelManagerDialog(services, downloads, tasks)
        manager.resize(1060, 520)
        manager.show()
        await manager.refresh_task
        manager.select_key("qwen3-4b")
        manager.download_selected(use_when_done=False)
        going = asyncio.Event()
        downloads.progress.connect(lambda t: t.done > 12 << 20 and going.set())
        await going.wait()
        await asyncio.sleep(0.3)
        manager.grab().save(str(out / "screenshot-models.png"))
        downloads.cancel_all()
        await asyncio.sleep(0.5)

    with loop:
        loop.run_until_complete(shoot())


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]) if len(sys.argv) > 2 else None)
