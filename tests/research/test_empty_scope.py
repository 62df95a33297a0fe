"""Nothing to search: the one check the window and ``fathom ask`` share
(:func:`app.research.engine.empty_scope_problem`), and ``fathom ask`` refusing
an empty scope before it loads a model."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

import pytest

from app.commands import ask
from app.core.models import Collection, Scope
from app.research.engine import empty_scope_problem


class Catalog:
    """A library as far as the check sees it: its collections, as the catalog counts them."""

    def __init__(self, *collections: Collection) -> None:
        self.listed = list(collections)
        self.closed = False

    async def collections(self) -> list[Collection]:
        return list(self.listed)

    async def aclose(self) -> None:
        self.closed = True


FULL, EMPTY = Collection("full", documents=3), Collection("empty")


@pytest.mark.parametrize(
    ("collections", "scope", "problem"),
    [
        ((), (), "The library is empty."),
        ((EMPTY,), (), "The library's collections have no indexed documents yet."),
        ((EMPTY, FULL), ("empty",), "The collection empty has no indexed documents yet."),
        (
            (EMPTY, Collection("blank")),
            ("empty", "blank"),
            "The collections empty, blank have no indexed documents yet.",
        ),
        ((EMPTY, FULL), (), None),
        ((EMPTY, FULL), ("full",), None),
        ((EMPTY, FULL), ("empty", "full"), None),
    ],
)
def test_what_makes_a_scope_empty(
    collections: tuple[Collection, ...], scope: tuple[str, ...], problem: str | None
) -> None:
    found = asyncio.run(empty_scope_problem(Catalog(*collections), Scope(scope)))  # type: ignore[arg-type]
    assert found == problem


def run_ask(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="fathom ask")
    ask.add_arguments(parser)
    return ask.run(parser.parse_args(argv))


@pytest.mark.parametrize(
    ("collections", "argv", "said"),
    [
        ((), [], "The library is empty."),
        (
            (EMPTY, FULL),
            ["--collection", "empty"],
            "The collection empty has no indexed documents yet.",
        ),
    ],
)
def test_ask_refuses_an_empty_scope_before_loading_a_model(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    collections: tuple[Collection, ...],
    argv: list[str],
    said: str,
) -> None:
    import app.ingest.library
    import app.llm.factory

    catalog = Catalog(*collections)
    monkeypatch.setattr(app.ingest.library.Library, "open", staticmethod(lambda *_a, **_k: catalog))

    async def no_model(*_args: Any, **_kwargs: Any) -> Any:
        raise AssertionError("a model was loaded for a run with nothing to search")

    monkeypatch.setattr(app.llm.factory, "make_chat_model_async", no_model)
    assert run_ask(["What is Milvus?", *argv]) == 2
    err = capsys.readouterr().err
    assert f"Add documents first: {said}" in err and "fathom ingest PATH" in err
    assert catalog.closed
