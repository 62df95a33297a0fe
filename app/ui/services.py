"""The engine-side objects the window uses, loaded after the window is up.

Importing the whole stack (Docling, pymilvus, onnxruntime, llama.cpp) takes
seconds, so the window never imports it on start-up: :class:`Services`
opens the library and creates the model in an executor once the window is
shown, and the panels are handed the objects when they are ready. Settings
are written off the loop too (:func:`app.ui.tasks.run_blocking`).
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from app.core.errors import FathomError
from app.core.paths import AppPaths
from app.core.settings import Settings, save_settings
from app.ui.history_store import HistoryStore
from app.ui.tasks import run_blocking

if TYPE_CHECKING:
    from app.ingest.library import Library
    from app.llm.base import ChatModel
    from app.llm.factory import BackendStatus
    from app.research.engine import ResearchEngine
    from app.store.lock import InstanceLock

log = logging.getLogger(__name__)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, FathomError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


def _warm_library(library: Any) -> None:
    """Load what the first ingest would otherwise load on the event loop (the
    embedder's tokenizer takes a few hundred ms); failures surface at ingest."""
    try:
        _ = library.embedder().tokenizer
    except Exception as exc:  # the ingest reports the real problem with its sentence
        log.info("could not preload the embedder: %s", exc)


# What the first research run imports (the model factory, jsonschema for structured
# replies, the engine): imported while the library opens, at start-up, rather than when
# the first run starts, where the import held the GIL against the window for ~0.1 s.
FIRST_RUN_MODULES = ("app.llm.factory", "jsonschema", "app.research.engine")


def _warm_first_run() -> None:
    for name in FIRST_RUN_MODULES:
        try:
            importlib.import_module(name)
        except ImportError as exc:  # the run itself reports it, with its sentence
            log.info("could not preload %s: %s", name, exc)


PROBE_MODULES = (
    "app.llm.factory",
    "app.llm.keys",
    "app.llm.ollama_backend",
    "app.llm.openai_backend",
)


def _preload(modules: tuple[str, ...]) -> None:
    """Import ``modules`` (a back end that is not installed is left to say so when it is used)."""
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            log.info("could not preload %s: %s", name, exc)


class Services:
    """Settings, paths and the lazily loaded library, model and engine."""

    def __init__(
        self, settings: Settings, paths: AppPaths, startup_lock: InstanceLock | None = None
    ) -> None:
        self.settings = settings
        self._startup_lock = startup_lock
        self.paths = paths
        self.history = HistoryStore(paths)
        self.library: Library | None = None
        self.model: ChatModel | None = None
        self._engine: ResearchEngine | None = None
        self.library_error = ""
        self.model_error = ""
        self.model_notice = ""
        self._library_task: asyncio.Task[Library] | None = None
        self._model_task: asyncio.Task[ChatModel] | None = None

    # -- settings ---------------------------------------------------------
    async def save_settings(self, settings: Settings) -> None:
        """Write ``settings`` to the settings file (off the loop), then use them."""
        await run_blocking(
            save_settings, settings, self.paths.settings_file, name="write the settings file"
        )
        model_changed = settings.model != self.settings.model
        self.settings = settings
        if model_changed:
            self.forget_model()

    def forget_model(self) -> None:
        """Drop the model (a new one is made on the next run with the new settings)."""
        old = self.model
        self.model = None
        self._engine = None
        self._model_task = None
        self.model_error = ""
        if old is not None:
            task = asyncio.ensure_future(old.aclose())
            task.add_done_callback(lambda t: t.cancelled() or t.exception())

    # -- library ----------------------------------------------------------
    async def open_library(self) -> Library:
        if self.library is not None:
            return self.library
        if self._library_task is None:
            self._library_task = asyncio.ensure_future(self._open_library())
        return await asyncio.shield(self._library_task)

    async def _open_library(self) -> Library:
        settings, paths = self.settings, self.paths

        def work() -> Library:
            from app.ingest.library import Library

            # The window took the data dir's lock at start-up (to say "already open" at
            # once); the library takes it itself, so hand it over right before.
            if self._startup_lock is not None:
                self._startup_lock.close()
                self._startup_lock = None
            library = Library.open(settings, paths)
            _warm_library(library)
            _warm_first_run()
            return library

        try:
            self.library = await run_blocking(work, name="open the library")
        except BaseException as exc:
            self.library_error = _describe(exc)
            self._library_task = None
            raise
        self.library_error = ""
        return self.library

    # -- model ------------------------------------------------------------
    async def open_model(self) -> ChatModel:
        if self.model is not None:
            return self.model
        if self._model_task is None:
            self._model_task = asyncio.ensure_future(self._open_model())
        return await asyncio.shield(self._model_task)

    async def _open_model(self) -> ChatModel:
        settings = self.settings

        def work() -> Any:
            from app.llm.factory import make_chat_model

            model = make_chat_model(settings)
            model.warm_up()  # what its first call would load on the loop, loaded here
            return model

        try:
            made = await run_blocking(work, name="load the model")
            if inspect.isawaitable(made):
                made = await made
        except BaseException as exc:
            self.model_error = _describe(exc)
            self._model_task = None
            raise
        model: ChatModel = made
        self.model = model
        self.model_error = ""
        self.model_notice = await run_blocking(
            self._starter_notice, made, name="read the starter model's notice"
        )
        return model

    @staticmethod
    def _starter_notice(model: Any) -> str:
        try:
            from app.llm.factory import starter_notice
        except ImportError:
            return ""
        notice = starter_notice(model)
        return str(notice or "")

    async def list_models(self, settings: Settings, backend: str) -> list[str]:
        """The models a back end's server offers (for the settings dialog); raises a
        FathomError with the server's problem when it cannot be reached."""
        for status in await self.probe(settings):
            if status.name == backend:
                if not status.reachable:
                    raise FathomError(f"The {backend} server did not answer: {status.detail}")
                return list(status.models)
        raise FathomError(f"Fathom cannot list the models of the {backend} back end.")

    async def probe(self, settings: Settings) -> list[BackendStatus]:
        """What back ends are reachable and which models they offer (first-run setup)."""
        # import off the GUI thread: the probes import their back ends (httpx, ollama, openai) as they run
        await run_blocking(_preload, PROBE_MODULES, name="import the model back ends")
        from app.llm.factory import probe_backends

        return await probe_backends(settings)

    # -- engine -----------------------------------------------------------
    async def engine(self) -> ResearchEngine:
        if self._engine is not None:
            return self._engine
        library = await self.open_library()
        model = await self.open_model()
        await run_blocking(
            importlib.import_module, "app.research.engine", name="import the research engine"
        )
        from app.research.engine import ResearchEngine

        # the engine records each run from a writer thread of its own: no SQLite on this loop
        self._engine = ResearchEngine(model, library, history=self.paths.catalog_file)
        return self._engine

    # -- shutdown ---------------------------------------------------------
    async def aclose(self) -> None:
        closers: list[Callable[[], Any]] = []
        if self.model is not None:
            closers.append(self.model.aclose)
        if self.library is not None:
            closers.append(self.library.aclose)
        for close in closers:
            try:
                await asyncio.wait_for(close(), timeout=10)
            except Exception as exc:  # closing must go on
                log.warning("closing failed: %r", exc)
        await self.history.aclose()
        if self._startup_lock is not None:
            self._startup_lock.close()
            self._startup_lock = None
        self.model = None
        self.library = None
        self._engine = None
