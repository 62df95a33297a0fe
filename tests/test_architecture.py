"""The layering contract: only app.ui imports Qt, and arrows point one way."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_hold() -> None:
    lint_imports = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert lint_imports, "import-linter is not installed (pip install -e '.[dev]')"
    result = subprocess.run([lint_imports], cwd=ROOT, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def _top_level_imports(source: Path) -> set[str]:
    import ast

    names: set[str] = set()
    for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_the_app_never_imports_the_tests_or_the_benchmarks() -> None:
    """tests/bench may import app, never the reverse: no module of app/ imports ``tests``
    or any module that lives under tests/ (benchmarks and helpers are imported by their
    file name, with tests/ or tests/bench on sys.path)."""
    test_modules = {"tests"} | {path.stem for path in (ROOT / "tests").rglob("*.py")} - {"__init__"}
    offenders = {
        f"{source.relative_to(ROOT)} imports {name}"
        for source in (ROOT / "app").rglob("*.py")
        for name in _top_level_imports(source) & test_modules
    }
    assert (
        "bench_musique" in test_modules and "deepsearcher_faithful" in test_modules
    )  # the walk found them
    assert not offenders, sorted(offenders)
