"""Settings: one schema with a default for every option, a versioned TOML file
written atomically.

An invalid file never stops the app: :func:`load_settings` returns the
defaults together with a sentence that says what was wrong, and the caller
shows it. API keys are never stored here (they go to the OS keyring).
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomli_w

from app.core.codec import from_jsonable, to_jsonable
from app.core.errors import SettingsError

SETTINGS_VERSION = 1


@dataclass(frozen=True)
class LlamaCppSettings:
    model_path: str = ""  # a GGUF file; empty means the starter model when installed
    n_ctx: int = 8192
    n_threads: int = 0  # 0: all cores
    n_gpu_layers: int = 0


@dataclass(frozen=True)
class OllamaSettings:
    host: str = "http://127.0.0.1:11434"
    model: str = ""
    think: bool = True  # ask reasoning models to think (shown in the tree)


@dataclass(frozen=True)
class OpenAISettings:
    base_url: str = ""  # e.g. http://127.0.0.1:8080/v1 (llama-server, LM Studio, vLLM)
    model: str = ""
    # The API key lives in the OS keyring under service "fathom" and this base URL.


@dataclass(frozen=True)
class ModelSettings:
    backend: str = "auto"  # auto | llamacpp | ollama | openai
    temperature: float = 0.2
    timeout_s: float = 300.0
    llamacpp: LlamaCppSettings = field(default_factory=LlamaCppSettings)
    ollama: OllamaSettings = field(default_factory=OllamaSettings)
    openai: OpenAISettings = field(default_factory=OpenAISettings)


@dataclass(frozen=True)
class ModelsSettings:
    catalog: str = ""  # the recommended-models catalog: a file or http(s) URL; empty: the built-in one


@dataclass(frozen=True)
class EmbeddingSettings:
    backend: str = "onnx"  # onnx (bundled all-MiniLM-L6-v2) | ollama | openai
    model: str = "all-MiniLM-L6-v2"  # for ollama/openai: the server's embedding model (e.g. nomic-embed-text)
    base_url: str = ""  # ollama/openai server; empty: model.ollama.host or model.openai.base_url
    batch_size: int = 32


@dataclass(frozen=True)
class StoreSettings:
    milvus_uri: str = ""  # empty: Milvus Lite under the data dir; http(s)://… a server


@dataclass(frozen=True)
class IngestSettings:
    max_file_mb: int = 200
    # one file's reading: the worker is killed past either, the file named (app/ingest/convert/limits.py)
    memory_per_file_mb: int = 2048
    seconds_per_file: int = 120  # and 10 s more per MB of file, 10 s per page OCR reads
    follow_links_outside: bool = False  # symbolic links in a folder that point outside it
    docling_artifacts_path: str = ""  # folder with Docling's layout models; empty: native PDF text
    chunk_max_tokens: int = 256
    workers: int = 0  # embedding threads; 0: one per core (app/ingest/pipeline/machine.py)
    ocr: bool = True  # read scanned PDF pages and image files with OCR (slow on a CPU: seconds a page)
    watch_folders: bool = True  # the window follows watched collections' folders (re-scans on changes)


@dataclass(frozen=True)
class ResearchSettings:
    mode: str = "deep"
    max_rounds: int = 3
    max_subqueries: int = 4
    max_search_calls: int = 24
    max_tokens: int = 60_000
    max_seconds: float = 600.0
    max_concurrent_calls: int = 2
    top_k: int = 6


@dataclass(frozen=True)
class UiSettings:
    theme: str = "system"  # system | light | dark
    first_run_done: bool = False
    dismissed_model_notice: str = ""  # the model whose notice was dismissed (another model's shows again)


@dataclass(frozen=True)
class Settings:
    version: int = SETTINGS_VERSION
    model: ModelSettings = field(default_factory=ModelSettings)
    models: ModelsSettings = field(default_factory=ModelsSettings)
    embedding: EmbeddingSettings = field(default_factory=EmbeddingSettings)
    store: StoreSettings = field(default_factory=StoreSettings)
    ingest: IngestSettings = field(default_factory=IngestSettings)
    research: ResearchSettings = field(default_factory=ResearchSettings)
    ui: UiSettings = field(default_factory=UiSettings)


def replace_setting(settings: Settings, dotted: str, value: Any) -> Settings:
    """A copy of ``settings`` with one option (``"model.ollama.host"``) changed."""
    changed: Settings = _replace_nested(settings, dotted, value)
    return changed


def _replace_nested(obj: Any, dotted: str, value: Any) -> Any:
    head, _, rest = dotted.partition(".")
    if not hasattr(obj, head):
        raise SettingsError(f"Unknown setting '{dotted}'.")
    new_value = _replace_nested(getattr(obj, head), rest, value) if rest else value
    return dataclasses.replace(obj, **{head: new_value})


def _migrate(data: dict[str, Any]) -> dict[str, Any]:
    """Bring an older file's data to :data:`SETTINGS_VERSION`."""
    version = data.get("version", SETTINGS_VERSION)
    if not isinstance(version, int) or version > SETTINGS_VERSION:
        raise SettingsError(
            f"The settings file has version {version!r}, newer than this Fathom understands ({SETTINGS_VERSION}).",
            "Update Fathom, or delete the file to start from defaults.",
        )
    # Version 1 is the first; later versions add steps here.
    data["version"] = SETTINGS_VERSION
    return data


def _check_known_keys(cls: type, data: dict[str, Any], where: str) -> None:
    names = {f.name: f for f in dataclasses.fields(cls)}
    for key, value in data.items():
        if key not in names:
            raise SettingsError(f"Unknown setting '{where}{key}'.")
        sub = names[key].type
        sub_cls = globals().get(sub) if isinstance(sub, str) else sub
        if isinstance(sub_cls, type) and dataclasses.is_dataclass(sub_cls):
            if not isinstance(value, dict):
                raise SettingsError(f"Setting '{where}{key}' must be a table.")
            _check_known_keys(sub_cls, value, f"{where}{key}.")


def settings_from_dict(data: dict[str, Any]) -> Settings:
    data = _migrate(dict(data))
    _check_known_keys(Settings, data, "")
    try:
        settings: Settings = from_jsonable(Settings, data)
    except (TypeError, ValueError) as exc:
        raise SettingsError(f"A setting has the wrong type: {exc}.") from exc
    return settings


def load_settings(path: Path) -> tuple[Settings, str | None]:
    """Read settings; on any problem return defaults and a sentence saying why."""
    if not path.exists():
        return Settings(), None
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        return settings_from_dict(data), None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        problem = f"The settings file {path} is not valid TOML ({exc})."
    except SettingsError as exc:
        problem = f"The settings file {path} is invalid: {exc}"
    except OSError as exc:
        problem = f"The settings file {path} could not be read ({exc.strerror})."
    return Settings(), f"{problem} Fathom started with default settings; saving settings will replace the file."


def save_settings(settings: Settings, path: Path) -> None:
    """Write atomically: a crash mid-write leaves the previous file intact."""
    text = tomli_w.dumps(to_jsonable(settings))
    write_atomic(path, text)


def write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
