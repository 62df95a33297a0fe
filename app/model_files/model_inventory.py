"""One list of models: those on this machine and those recommended for download.

On this machine: GGUF files in Fathom's models folder and in the folders other
tools already filled (GPT4All, LM Studio), the GGUF chosen in Settings, the
starter model, and Ollama's models (when the caller asked Ollama). Read from each
file's GGUF header, never guessed from its name. Recommended: the catalog's
entries not yet here. Each row says whether it fits this machine and whether it
is the model research runs use now; :func:`settings_using` makes one the model.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from app.core.errors import FathomError
from app.core.paths import AppPaths
from app.core.settings import Settings, replace_setting
from app.llm.factory import chat_models
from app.llm.ollama_client import OllamaModelInfo
from app.llm.starter import STARTER_NAME, starter_model_path
from app.model_files.catalog import Catalog, CatalogEntry
from app.model_files.download import partial_path
from app.model_files.gguf_info import GgufInfo
from app.model_files.machine_fit import GIB, Fit, Machine, judge_fit, memory_needed, recommendable
from app.model_files.machine_speed import ANSWER_WITHIN_S
from app.model_files.model_folders import LocalModel, find_local_models, known_model_folders

OLLAMA_PREFIX = "ollama:"
LocalBackend = Literal["llamacpp", "ollama"]  # the back ends a listed model runs on
# The setting that names the model of each local back end.
_MODEL_SETTING: dict[LocalBackend, str] = {
    "llamacpp": "model.llamacpp.model_path",
    "ollama": "model.ollama.model",
}
UNKNOWN_FIT = Fit("unknown", "")
STARTER_KEY = "starter"
SOURCE_LABELS = {
    "catalog": "to download",
    "fathom": "Fathom",
    "gpt4all": "GPT4All",
    "lmstudio": "LM Studio",
    "starter": "starter",
    "settings": "Settings",
    "ollama": "Ollama",
}


class ModelChoiceError(FathomError):
    """A model named on the command line or in the window cannot be used as asked."""


@dataclass(frozen=True)
class ModelRow:
    """One model in the list (installed or recommended)."""

    key: str  # what `fathom models use KEY` takes: a catalog id, "ollama:NAME", or a GGUF path
    name: str
    source: str  # see SOURCE_LABELS
    installed: bool
    path: str = ""  # the GGUF file ("" for Ollama and for what is not downloaded)
    parameters: str = ""
    quantization: str = ""
    size_bytes: int = 0
    ram_needed: int = 0
    context: int = 0
    license: str = ""
    reasoning: bool | None = None
    chat: bool = True
    fit: Fit = UNKNOWN_FIT
    in_use: bool = False
    catalog_id: str = ""
    ollama_tag: str = ""  # the Ollama name: the model itself, or the catalog entry's tag
    why: str = ""
    problem: str = ""  # why a file is listed but unusable
    recommended: bool = False  # the one model the first-run dialog proposes
    answer_s: float | None = None  # about how long a deep answer takes here (None: not measured)

    @property
    def source_label(self) -> str:
        return SOURCE_LABELS.get(self.source, self.source)


# -- which model runs now --------------------------------------------------------


def model_in_use(settings: Settings, ollama_names: Sequence[str] | None) -> tuple[str, str]:
    """("gguf", path) or ("ollama", name) that research runs would use now, as
    :func:`app.llm.factory.make_chat_model` decides; ("", "") when none."""
    m = settings.model
    if m.backend == "ollama":
        return ("ollama", m.ollama.model) if m.ollama.model else ("", "")
    if m.backend == "openai":
        return ("openai", m.openai.model)
    if m.backend == "auto" and ollama_names:
        if m.ollama.model and m.ollama.model in ollama_names:
            return "ollama", m.ollama.model
        chat = chat_models(list(ollama_names))
        if chat:
            return "ollama", chat[0]
    if m.llamacpp.model_path:
        return "gguf", str(Path(m.llamacpp.model_path).expanduser())
    starter = starter_model_path()
    return ("gguf", str(starter)) if starter is not None else ("", "")


def _same_file(a: str, b: str) -> bool:
    """The same path once links are resolved (a hard link elsewhere is another model file)."""
    if not a or not b:
        return False
    return os.path.realpath(a) == os.path.realpath(b)


# -- building the list -------------------------------------------------------------


def list_models(
    settings: Settings,
    paths: AppPaths,
    catalog: Catalog,
    machine: Machine,
    *,
    ollama: Sequence[OllamaModelInfo] | None = None,
    home: Path | None = None,
) -> list[ModelRow]:
    """Installed models first (the one in use at the top), then the catalog's others.

    ``ollama`` is what Ollama listed (None: not asked or not running)."""
    ollama_names = [m.name for m in ollama] if ollama is not None else None
    in_use = model_in_use(settings, ollama_names)
    n_ctx = settings.model.llamacpp.n_ctx
    local = _local_models(settings, paths, home)
    rows: list[ModelRow] = []
    claimed: set[str] = set()
    for model in local:
        entry = _catalog_match(catalog, model)
        if entry is not None:
            claimed.add(entry.id)
        rows.append(_gguf_row(model, entry, machine, n_ctx, in_use))
    for info in ollama or ():
        entry = next((e for e in catalog.entries if e.ollama and e.ollama == info.name), None)
        if entry is not None:
            claimed.add(entry.id)
        rows.append(_ollama_row(info, entry, machine, in_use))
    recommended = recommend(catalog, machine)
    for entry in catalog.entries:
        if entry.id in claimed:
            continue
        needed = int(entry.ram_gb * GIB)
        rows.append(
            ModelRow(
                key=entry.id,
                name=entry.name,
                source="catalog",
                installed=False,
                parameters=entry.parameters,
                quantization=entry.quantization,
                size_bytes=entry.size_bytes,
                answer_s=_answer_s(entry.size_bytes, machine),
                ram_needed=needed,
                context=entry.context,
                license=entry.license,
                reasoning=entry.reasoning,
                fit=judge_fit(needed, machine),
                catalog_id=entry.id,
                ollama_tag=entry.ollama,
                why=entry.why,
                recommended=recommended is not None and entry.id == recommended.id,
            )
        )
    rows.sort(key=lambda r: (not r.in_use, not r.installed, r.source == "starter"))
    return rows


def _local_models(settings: Settings, paths: AppPaths, home: Path | None) -> list[LocalModel]:
    found = find_local_models(known_model_folders(paths.models_dir, home=home))
    extra: list[LocalModel] = []
    starter = starter_model_path()
    if starter is not None:
        extra.append(_local_from_path("starter", starter))
    configured = settings.model.llamacpp.model_path
    if configured:
        extra.append(_local_from_path("settings", Path(configured).expanduser()))
    for model in extra:
        if not any(_same_file(str(model.path), str(f.path)) for f in found):
            found.append(model)
    return found


def _local_from_path(source: str, path: Path) -> LocalModel:
    from app.model_files.gguf_info import GgufError, read_gguf_info

    try:
        return LocalModel(source, path, read_gguf_info(path))
    except GgufError as exc:
        return LocalModel(source, path, None, str(exc))
    except OSError as exc:
        return LocalModel(source, path, None, f"{path} cannot be read ({exc.strerror or exc}).")


def _catalog_match(catalog: Catalog, model: LocalModel) -> CatalogEntry | None:
    """The catalog entry a local file is (same file name and size: no hashing of gigabytes)."""
    try:
        size = model.path.stat().st_size
    except OSError:
        return None
    return next(
        (e for e in catalog.entries if e.file_name == model.path.name and e.size_bytes == size),
        None,
    )


def _gguf_row(
    model: LocalModel,
    entry: CatalogEntry | None,
    machine: Machine,
    n_ctx: int,
    in_use: tuple[str, str],
) -> ModelRow:
    info: GgufInfo | None = model.info
    path = str(model.path)
    using = in_use[0] == "gguf" and _same_file(in_use[1], path)
    if info is None:
        return ModelRow(
            key=path,
            name=model.path.stem,
            source=model.source,
            installed=True,
            path=path,
            in_use=using,
            chat=False,
            problem=model.problem,
            fit=Fit("unknown", "the file's header could not be read"),
        )
    context = min(n_ctx, info.context_length) if info.context_length else n_ctx
    needed = memory_needed(info.file_size, info.kv_cache_bytes(context))
    name = STARTER_NAME if model.source == "starter" else info.name
    return ModelRow(
        key=_gguf_key(model, entry),
        name=name,
        source=model.source,
        installed=True,
        path=path,
        parameters=info.size_label,
        quantization=info.quantization,
        size_bytes=info.file_size,
        answer_s=_answer_s(info.file_size, machine),
        ram_needed=needed,
        context=info.context_length,
        license=info.license or (entry.license if entry else ""),
        reasoning=info.reasoning,
        chat=info.chat,
        fit=judge_fit(needed, machine),
        in_use=using,
        catalog_id=entry.id if entry else "",
        ollama_tag=entry.ollama if entry else "",
        why=entry.why if entry else "",
        problem="" if info.chat else "not a chat model (an embedding or vision file)",
    )


def _gguf_key(model: LocalModel, entry: CatalogEntry | None) -> str:
    if model.source == "starter":
        return STARTER_KEY
    if entry is not None and model.source == "fathom":
        return entry.id
    return str(model.path)


def _ollama_row(
    info: OllamaModelInfo, entry: CatalogEntry | None, machine: Machine, in_use: tuple[str, str]
) -> ModelRow:
    needed = memory_needed(info.size_bytes, int(0.6 * GIB)) if info.size_bytes else 0
    return ModelRow(
        key=OLLAMA_PREFIX + info.name,
        name=info.name,
        source="ollama",
        installed=True,
        parameters=info.parameter_size,
        quantization=info.quantization,
        size_bytes=info.size_bytes,
        answer_s=_answer_s(info.size_bytes, machine),
        ram_needed=needed,
        license=entry.license if entry else "",
        reasoning=entry.reasoning if entry else None,
        chat=bool(chat_models([info.name])),
        fit=judge_fit(needed, machine),
        in_use=in_use == ("ollama", info.name),
        catalog_id=entry.id if entry else "",
        ollama_tag=info.name,
        why=entry.why if entry else "",
    )


def recommend(catalog: Catalog, machine: Machine) -> CatalogEntry | None:
    """The best catalog model for this machine: of those that fit in memory with room for
    the library, the largest that answers a deep question in about two minutes here (when
    the machine's speed is known; else the largest that fits), else the smallest that
    fits, else the smallest."""
    fitting = [e for e in catalog.entries if recommendable(int(e.ram_gb * GIB), machine)]
    if not fitting:
        return min(catalog.entries, key=lambda e: e.ram_gb, default=None)
    speed = machine.speed
    if speed is None:
        return max(fitting, key=lambda e: e.ram_gb)
    quick = [e for e in fitting if speed.answer_seconds(e.size_bytes) <= ANSWER_WITHIN_S]
    return (
        max(quick, key=lambda e: e.size_bytes)
        if quick
        else min(fitting, key=lambda e: e.size_bytes)
    )


def _answer_s(size_bytes: int, machine: Machine) -> float | None:
    return (
        machine.speed.answer_seconds(size_bytes)
        if machine.speed is not None and size_bytes
        else None
    )


# -- choosing ----------------------------------------------------------------------


def find_row(rows: Sequence[ModelRow], wanted: str) -> ModelRow:
    """The row ``wanted`` names: its key, catalog id, file path or name, model name, or
    an Ollama name (with or without ``ollama:``)."""
    text = wanted.strip()
    for match in (
        lambda r: r.key == text,
        lambda r: bool(r.catalog_id) and r.catalog_id == text and r.installed,
        lambda r: bool(r.catalog_id) and r.catalog_id == text,
        lambda r: bool(r.path) and (_same_file(r.path, text) or Path(r.path).name == text),
        lambda r: r.source == "ollama" and OLLAMA_PREFIX + text == r.key,
        lambda r: r.name.lower() == text.lower(),
    ):
        hits = [r for r in rows if match(r)]
        if len(hits) == 1:
            return hits[0]
        if len(hits) > 1:
            listed = ", ".join(f"{r.key} ({r.source_label})" for r in hits)
            raise ModelChoiceError(
                f"'{wanted}' names more than one model: {listed}.", "Use one of those keys."
            )
    raise ModelChoiceError(
        f"No model '{wanted}' is on this machine or in the catalog.",
        "`fathom models list` shows the keys to use.",
    )


def settings_using(row: ModelRow, settings: Settings) -> Settings:
    """``settings`` with ``row`` as the research model."""
    if not row.installed:
        raise ModelChoiceError(
            f"{row.name} is not downloaded yet.",
            f"Download it first: `fathom models download {row.key}`.",
        )
    if row.problem and not row.chat:
        raise ModelChoiceError(f"{row.name} cannot run research: {row.problem}.")
    if row.source == "ollama":
        return settings_with_model(settings, "ollama", row.ollama_tag)
    if row.problem:
        raise ModelChoiceError(f"{row.name} cannot be used: {row.problem}")
    return settings_with_model(settings, "llamacpp", "" if row.source == "starter" else row.path)


def settings_with_model(settings: Settings, backend: LocalBackend, model: str) -> Settings:
    """``settings`` with research on ``backend``: ``model`` is a GGUF path for llama.cpp
    ("" for the starter model), a model name for Ollama."""
    changed = replace_setting(settings, "model.backend", backend)
    return replace_setting(changed, _MODEL_SETTING[backend], model)


def settings_without(row: ModelRow, settings: Settings) -> Settings:
    """``settings`` once ``row`` is removed: back to choosing automatically when it was in use."""
    if not row.in_use:
        return settings
    changed = replace_setting(settings, "model.backend", "auto")
    return replace_setting(
        changed, _MODEL_SETTING["ollama" if row.source == "ollama" else "llamacpp"], ""
    )


def removable_file(row: ModelRow, paths: AppPaths) -> Path:
    """The file ``fathom models remove`` deletes: only Fathom's own downloads."""
    if row.source == "fathom":
        return Path(row.path)
    if row.source == "catalog":
        raise ModelChoiceError(f"{row.name} is not downloaded; there is nothing to remove.")
    if row.source == "starter":
        raise ModelChoiceError(
            "The starter model is part of the installation; it is not removed.",
            "Choose another model to use instead (`fathom models use KEY`).",
        )
    owner = row.source_label
    raise ModelChoiceError(
        f"{row.path} belongs to {owner}; Fathom does not delete other programs' files.",
        f"Remove it in {owner}, or delete the file yourself.",
    )


def delete_model_file(path: Path) -> None:
    """Delete a model file and the part of an unfinished download of it (either may be missing)."""
    path.unlink(missing_ok=True)
    partial_path(path).unlink(missing_ok=True)
