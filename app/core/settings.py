"""Settings: one schema with a default for every option, a versioned TOML file
written atomically.

An invalid file never stops the app: :func:`load_settings` returns the
defaults together with a sentence that says what was wrong, and the caller
shows it. API keys are never stored here (they go to the OS keyring).
"""

from __future__ import annotations

import copy
import dataclasses
import os
import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

import tomli_w

from app.core.codec import from_jsonable, to_jsonable
from app.core.errors import SettingsError
from app.core.options import check_values, option

SETTINGS_VERSION = 1
# the research modes (app/research/modes; core cannot import research: a test keeps them equal)
ResearchMode = Literal["deep", "plan", "table", "hds", "quick"]
RESEARCH_MODES: tuple[ResearchMode, ...] = get_args(ResearchMode)
ModelBackend = Literal[
    "auto", "llamacpp", "ollama", "openai"
]  # auto: Ollama if it runs, else llama.cpp
EmbeddingBackend = Literal["onnx", "ollama", "openai"]
Theme = Literal["system", "light", "dark"]


@dataclass(frozen=True)
class LlamaCppSettings:
    model_path: str = ""  # a GGUF file; empty means the starter model when installed
    n_ctx: int = option(
        8192, low=512, high=1_048_576, help="context window of a llama.cpp model, in tokens"
    )
    n_threads: int = option(0, low=0, high=1024, help="threads llama.cpp uses; 0: all cores")
    n_gpu_layers: int = option(
        0, low=-1, high=10_000, help="layers llama.cpp offloads to a GPU; -1: all"
    )


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
    backend: ModelBackend = option(
        "auto", choices=get_args(ModelBackend), help="the research model's back end"
    )
    temperature: float = option(
        0.2, low=0.0, high=2.0, help="the research model's sampling temperature"
    )
    timeout_s: float = option(300.0, low=1, high=86_400, help="seconds one model call may take")
    llamacpp: LlamaCppSettings = field(default_factory=LlamaCppSettings)
    ollama: OllamaSettings = field(default_factory=OllamaSettings)
    openai: OpenAISettings = field(default_factory=OpenAISettings)


@dataclass(frozen=True)
class ModelsSettings:
    catalog: str = (
        ""  # the recommended-models catalog: a file or http(s) URL; empty: the built-in one
    )


@dataclass(frozen=True)
class EmbeddingSettings:
    backend: EmbeddingBackend = option(
        "onnx",
        choices=get_args(EmbeddingBackend),
        help="onnx: the bundled all-MiniLM-L6-v2; or a server's model",
    )
    model: str = "all-MiniLM-L6-v2"  # for ollama/openai: the server's embedding model (e.g. nomic-embed-text)
    base_url: str = ""  # ollama/openai server; empty: model.ollama.host or model.openai.base_url
    batch_size: int = option(32, low=1, high=4096, help="texts embedded in one call")


@dataclass(frozen=True)
class StoreSettings:
    milvus_uri: str = ""  # empty: Milvus Lite under the data dir; http(s)://… a server


@dataclass(frozen=True)
class IngestSettings:
    max_file_mb: int = option(
        200, low=1, high=1_000_000, help="larger files are skipped, with the reason"
    )
    # one file's reading: the worker is killed past either, the file named (app/ingest/convert/limits.py)
    memory_per_file_mb: int = option(
        2048, low=256, high=1_048_576, help="memory one file may take to read"
    )
    seconds_per_file: int = option(
        120,
        low=10,
        high=864_000,
        help="time one file may take to read, plus 10 s per MB and per OCR page",
    )
    follow_links_outside: bool = False  # symbolic links in a folder that point outside it
    docling_artifacts_path: str = ""  # folder with Docling's layout models; empty: native PDF text
    chunk_max_tokens: int = option(256, low=64, high=4096, help="most tokens in one chunk")
    workers: int = option(
        0,
        low=0,
        high=256,
        help="embedding threads; 0: one per core (app/ingest/pipeline/machine.py)",
    )
    ocr: bool = (
        True  # read scanned PDF pages and image files with OCR (slow on a CPU: seconds a page)
    )
    watch_folders: bool = (
        True  # the window follows watched collections' folders (re-scans on changes)
    )


@dataclass(frozen=True)
class ResearchSettings:
    mode: ResearchMode = option(
        "deep", choices=RESEARCH_MODES, help="the research mode a question gets"
    )
    max_rounds: int = option(3, low=1, high=100, help="most research rounds")
    max_subqueries: int = option(4, low=1, high=100, help="most sub-queries in a round")
    max_search_calls: int = option(24, low=1, high=10_000, help="most searches in a run")
    max_tokens: int = option(
        60_000, low=1000, high=100_000_000, help="most model tokens a run may spend"
    )
    max_seconds: float = option(600.0, low=10, high=864_000, help="most seconds a run may take")
    max_concurrent_calls: int = option(2, low=1, high=64, help="model calls at once")
    top_k: int = option(6, low=1, high=200, help="chunks one search returns")


@dataclass(frozen=True)
class UiSettings:
    theme: Theme = option("system", choices=get_args(Theme), help="the window's colours")
    first_run_done: bool = False
    dismissed_model_notice: str = (
        ""  # the model whose notice was dismissed (another model's shows again)
    )


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
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise SettingsError(
            f"The settings file's version is {version!r}, not a whole number from 1 (this Fathom writes "
            f"{SETTINGS_VERSION}).",
            "Correct it, or delete the file to start from defaults.",
        )
    if version > SETTINGS_VERSION:
        raise SettingsError(
            f"The settings file has version {version}, newer than this Fathom understands ({SETTINGS_VERSION}).",
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


def settings_from_dict(data: dict[str, Any], problems: list[str] | None = None) -> Settings:
    """Settings from a file's table. A value of the wrong type or out of range is replaced
    by its default, with a sentence in ``problems`` (raised as SettingsError when None)."""
    data = _migrate(copy.deepcopy(data))
    _check_known_keys(Settings, data, "")
    found = check_values(Settings, data)
    if found and problems is None:
        raise SettingsError(" ".join(found))
    if problems is not None:
        problems += found
    try:
        settings: Settings = from_jsonable(Settings, data)
    except (TypeError, ValueError) as exc:
        raise SettingsError(f"A setting has the wrong type: {exc}.") from exc
    return settings


def load_settings(path: Path) -> tuple[Settings, str | None]:
    """Read settings; on any problem return defaults and a sentence saying why. A value
    of the wrong type or out of range costs only itself: its default is used, and said."""
    if not path.exists():
        return Settings(), None
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        problems: list[str] = []
        settings = settings_from_dict(data, problems)
        if problems:
            return settings, f"In the settings file {path}: {' '.join(problems)}"
        return settings, None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        problem = f"The settings file {path} is not valid TOML ({exc})."
    except SettingsError as exc:
        problem = f"The settings file {path} is invalid: {exc}"
    except OSError as exc:
        problem = f"The settings file {path} could not be read ({exc.strerror})."
    return (
        Settings(),
        f"{problem} Fathom started with default settings; saving settings will replace the file.",
    )


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
