"""The run controller alone, with no window: a real run of the starter model
(llama.cpp, in process) over an in-memory library is started, shown through
the presenter, saved to the history by the engine, listed, reopened, exported
and deleted; a run stopped while its model loads is cancelled at once."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import EngineServices, await_in_test, drive

from app.core.events import Finished, RunStarted
from app.core.models import Budget, Scope
from app.core.paths import app_paths
from app.research.engine import ResearchEngine
from app.ui.report_view import ReportView
from app.ui.run_controller import RunController
from app.ui.run_presenter import RunPresenter
from app.ui.table_view import EntityTableView
from app.ui.tasks import TaskKeeper
from app.ui.tree_model import ResearchTreeModel

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "research"))
from scripted import MILVUS_CHUNKS, MemoryLibrary

pytestmark = pytest.mark.gui

QUESTION = "What is Milvus Lite?"
BUDGET = Budget(max_rounds=1, max_subqueries=1, max_search_calls=2, top_k=3)


class Recorder:
    """Every signal of a controller, in the order it was emitted."""

    def __init__(self, controller: RunController) -> None:
        self.seen: list[tuple[str, tuple[Any, ...]]] = []
        for name in (
            "runningChanged",
            "stopping",
            "stateText",
            "problem",
            "message",
            "modelName",
            "runOpened",
        ):
            getattr(controller, name).connect(
                lambda *args, name=name: self.seen.append((name, args))
            )
        self.histories: list[list[Any]] = []
        controller.historyChanged.connect(self.histories.append)

    def of(self, name: str) -> list[tuple[Any, ...]]:
        return [args for seen, args in self.seen if seen == name]


def make_controller(model: Any, qloop: Any) -> tuple[RunController, list[str]]:
    errors: list[str] = []
    engine = ResearchEngine(
        model, MemoryLibrary(list(MILVUS_CHUNKS)), history=app_paths().ensure().catalog_file
    )  # type: ignore[arg-type]
    presenter = RunPresenter(ResearchTreeModel(), ReportView(), EntityTableView())
    tasks = TaskKeeper(lambda name, exc: errors.append(f"{name}: {exc}"))
    services = EngineServices(engine)
    services.model = model  # as if loaded by the services (its name is shown)
    return RunController(services, presenter, tasks), errors


@pytest.fixture
def controllers(qapp: Any, qloop: Any, aloop: Any) -> Iterator[list[RunController]]:
    made: list[RunController] = []
    yield made
    for controller in made:
        drive(qloop, controller.stop_run())
        drive(qloop, controller.tasks.cancel_all())
        controller.services.model = None  # the session's model: not closed here
        drive(qloop, controller.services.aclose())


@pytest.mark.slow
def test_a_real_run_is_shown_saved_listed_reopened_exported_and_deleted_without_a_window(
    qtbot: Any, qloop: Any, controllers: list[RunController], starter_llm: Any, tmp_path: Path
) -> None:
    controller, errors = make_controller(starter_llm, qloop)
    controllers.append(controller)
    controller.run_options = {"report_max_tokens": 60}
    seen = Recorder(controller)
    presenter = controller.presenter

    with qtbot.waitSignal(
        controller.runningChanged, timeout=300_000, check_params_cb=lambda running: not running
    ):
        task = controller.start(QUESTION, "quick", Scope(()), BUDGET)
        assert task is not None and controller.running
        assert controller.start(QUESTION, "quick", Scope(()), BUDGET) is None  # one run at a time
    assert not controller.running and errors == []

    # shown: the presenter holds the whole run, the signals told its story in order
    assert seen.of("runningChanged") == [(True,), (False,)]
    assert seen.of("stateText")[0] == ("Loading the model…",) and seen.of("stateText")[-1] == (
        "Finished",
    )
    assert seen.of("modelName") == [(starter_llm.model_name,)]
    assert isinstance(presenter.events[0], RunStarted) and presenter.events[0].question == QUESTION
    final = presenter.events[-1]
    assert isinstance(final, Finished) and presenter.state == "finished"
    assert presenter.report is not None and presenter.report.markdown.strip()
    run_id, shape, events = presenter.run_id, presenter.model.shape(), list(presenter.events)

    # saved and listed: once the run has ended, the history is read again and lists it
    qtbot.waitUntil(lambda: bool(seen.histories), timeout=10_000)
    assert [r.run_id for r in seen.histories[-1]] == [run_id]

    # reopened: the same events replay into the same tree and report
    presenter.reset()
    await_in_test(qtbot, controller.open_run(run_id))
    assert presenter.events == events and presenter.model.shape() == shape
    ((opened,),) = seen.of("runOpened")  # what the run asked, to show again
    assert isinstance(opened, RunStarted) and opened.question == QUESTION
    assert opened.mode == "quick" and opened.budget == BUDGET and opened.collections == ()

    # exported off the GUI thread
    written = await_in_test(qtbot, controller.export(tmp_path / "report.md"))
    assert written == tmp_path / "report.md"
    assert written.read_text(encoding="utf-8").startswith(f"# {QUESTION}")
    with pytest.raises(ValueError, match="no table"):
        await_in_test(qtbot, controller.export(tmp_path / "table.csv"))

    # deleted: gone from the history, and no longer shown
    await_in_test(qtbot, controller.delete_run(run_id))
    assert seen.histories[-1] == [] and presenter.state == "idle" and presenter.events == []
    assert errors == []


class LoadingForever(EngineServices):
    """A model that never finishes loading."""

    def __init__(self, engine: ResearchEngine) -> None:
        super().__init__(engine)
        self.loading = asyncio.Event()

    async def engine(self) -> ResearchEngine:
        self.loading.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


def test_a_run_stopped_while_its_model_loads_is_cancelled_and_a_closed_controller_does_no_more(
    qtbot: Any, qloop: Any, controllers: list[RunController]
) -> None:
    controller, errors = make_controller(None, qloop)
    controller.services = services = LoadingForever(controller.services._given)  # type: ignore[attr-defined]
    controllers.append(controller)
    seen = Recorder(controller)
    controller.close()
    task = controller.start(QUESTION, "quick", Scope(()), BUDGET)
    assert task is not None
    qtbot.waitUntil(services.loading.is_set, timeout=5_000)

    assert controller.stop() is task and controller.stop() is task  # asked once
    qtbot.waitUntil(task.done, timeout=5_000)
    assert task.cancelled() and not controller.running
    assert seen.of("stopping") == [()] and ("Stopping…",) in seen.of("stateText")
    assert seen.of("runningChanged") == [(True,), (False,)]
    qtbot.wait(50)
    assert seen.histories == [] and errors == []  # closed: the history is not read again
