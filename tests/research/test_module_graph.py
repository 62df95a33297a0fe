"""app.research's modules import one another without a cycle, the research
core never imports a mode, and no module of app imports the tests."""

from __future__ import annotations

import grimp

GRAPH = grimp.build_graph("app", cache_dir=None)
RESEARCH = sorted(m for m in GRAPH.modules if m.startswith("app.research."))


def _imports(module: str) -> set[str]:
    return {
        m for m in GRAPH.find_modules_directly_imported_by(module) if m.startswith("app.research.")
    }


def test_research_modules_form_no_cycle() -> None:
    cycles = [
        (a, b)
        for a in RESEARCH
        for b in _imports(a)
        if a != b and GRAPH.chain_exists(importer=b, imported=a)  # a -> b and b ->* a
    ]
    assert cycles == []


def test_the_research_core_never_imports_a_mode() -> None:
    core = [
        m for m in RESEARCH if not m.startswith("app.research.modes") and m != "app.research.engine"
    ]
    leaks = {m: sorted(i for i in _imports(m) if i.startswith("app.research.modes")) for m in core}
    assert {m: i for m, i in leaks.items() if i} == {}


def test_app_never_imports_the_tests() -> None:
    graph = grimp.build_graph("app", cache_dir=None, include_external_packages=True)
    external = {
        m
        for m in graph.modules
        if m.split(".")[0] in {"tests", "bench", "deepsearcher_faithful", "scripted"}
    }
    assert external == set()
