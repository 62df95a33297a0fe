"""Run by tests/ui/test_pyside_import_hook.py in a fresh interpreter, with PySide6 loaded
first as in the window; prints one JSON line.

``threads [--fixed]``: two threads import modules (written by the test, on sys.path) whose
import is only safe while PySide6's hook leaves module attributes alone: thread A imports
``slowmod``, which waits until B is inside ``holdmod`` and then imports from it; B's
``holdmod`` imports ``lazymod``, whose module ``__getattr__`` (as pydantic's modules have)
imports from ``slowmod``. Prints what each thread's import ended with.
``compare``: PySide6's own check and Fathom's, over every module imported after loading
the window's modules and Docling. ``window``: which check is in place once app.ui.main is imported.
"""

from __future__ import annotations

import json
import sys
import threading
import types

import PySide6.QtCore  # noqa: F401  (PySide6's import hook is in place from here on)
from PySide6.support import feature  # type: ignore[attr-defined]  # not in the stubs


def _check() -> object:
    return feature.feature_imported.__globals__["_mod_uses_pyside"]


def threads(fixed: bool) -> dict[str, str]:
    if fixed:
        from app.ui.pyside_import_hook import make_feature_check_safe

        assert make_feature_check_safe()
    gate = types.ModuleType("_hook_gate")
    gate.a_inside = threading.Event()  # type: ignore[attr-defined]
    gate.b_inside = threading.Event()  # type: ignore[attr-defined]
    sys.modules["_hook_gate"] = gate
    results: dict[str, str] = {}

    def importing(key: str, name: str) -> None:
        try:
            __import__(name)
            results[key] = "ok"
        except BaseException as exc:  # what the thread's import ended with is the result
            results[key] = f"{type(exc).__name__}: {exc}"

    first = threading.Thread(target=importing, args=("a", "slowmod"))
    first.start()
    assert gate.a_inside.wait(30), "thread A never started its import"  # type: ignore[attr-defined]
    second = threading.Thread(target=importing, args=("b", "holdmod"))
    second.start()
    first.join(60)
    second.join(60)
    return results


def compare() -> dict[str, object]:
    original = _check()
    from app.ui.pyside_import_hook import make_feature_check_safe, uses_pyside

    assert make_feature_check_safe()  # PySide6's own check runs below only on modules it is safe on
    from docling.datamodel.base_models import InputFormat  # noqa: F401

    import app.ui.main_window  # noqa: F401

    answers: dict[str, tuple[bool, bool]] = {}
    for name, module in list(sys.modules.items()):
        if isinstance(module, types.ModuleType) and "__getattr__" not in module.__dict__:
            answers[name] = (bool(original(module)), uses_pyside(module))  # type: ignore[operator]
    return {
        "compared": len(answers),
        "differ": sorted(name for name, (theirs, ours) in answers.items() if theirs != ours),
        "using_pyside": sorted(name for name, (theirs, _) in answers.items() if theirs),
    }


def window() -> dict[str, str]:
    import app.ui.main  # noqa: F401

    check = _check()
    return {"check": f"{getattr(check, '__module__', '?')}.{getattr(check, '__name__', '?')}"}


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "threads":
        out: object = threads("--fixed" in sys.argv)
    elif mode == "compare":
        out = compare()
    else:
        out = window()
    print(json.dumps(out))
