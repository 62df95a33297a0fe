"""The catalog of recommended models: a JSON file shipped in ``resources/models.json``.

An organisation can replace it with its own (a mirror, other models): the
environment variable ``FATHOM_MODEL_CATALOG`` or the setting ``models.catalog``
names a file or an ``http(s)`` URL. A URL is fetched only when the person asks
(a refresh or a download), and the copy kept under the cache folder is what the
list shows until then: opening the model list contacts nothing.

Each entry names its file by a plain URL or by a Hugging Face repo and file
(resolved against ``HF_ENDPOINT``, so a hub mirror works too), with the sha256
and size the download is checked against.
"""

from __future__ import annotations

import json
import math
import os
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlparse

from app.core.errors import FathomError
from app.core.resources import resource_path

CATALOG_ENV = "FATHOM_MODEL_CATALOG"
CATALOG_FILE = "models.json"
HF_DEFAULT_ENDPOINT = "https://huggingface.co"
REQUIRED = ("id", "name", "sha256", "size_bytes", "ram_gb", "context", "license", "reasoning")
_SHA256 = re.compile(r"^[0-9a-fA-F]{64}$")
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,79}$")
# the most a catalog entry may say: a 1 TiB file, 4 TB of memory, a context of 16M tokens
MAX_SIZE_BYTES = 2**40
MAX_RAM_GB = 4096
MAX_CONTEXT = 2**24


class CatalogError(FathomError):
    """The model catalog could not be read or is not valid."""


@dataclass(frozen=True)
class CatalogEntry:
    """One recommended model."""

    id: str
    name: str
    url: str  # where the file is downloaded from (a Hugging Face entry resolved to its /resolve/ URL)
    file_name: str  # the name it gets in Fathom's models folder
    sha256: str
    size_bytes: int
    ram_gb: float  # memory needed to run it with Fathom's default context
    context: int
    license: str
    reasoning: bool
    parameters: str = ""
    quantization: str = ""
    ollama: str = ""  # the same model's Ollama tag, pulled instead when Ollama runs
    why: str = ""


@dataclass(frozen=True)
class Catalog:
    entries: tuple[CatalogEntry, ...]
    source: str  # the file or URL it came from
    note: str = ""  # why it is not the one asked for (a URL not fetched yet, a bad file)

    def get(self, entry_id: str) -> CatalogEntry | None:
        return next((e for e in self.entries if e.id == entry_id), None)


def shipped_catalog_path() -> Path:
    return resource_path(CATALOG_FILE)


def catalog_source(setting: str = "", environ: Mapping[str, str] | None = None) -> str:
    """Where the catalog comes from: the environment, else the setting, else the shipped file."""
    env = os.environ if environ is None else environ
    return (env.get(CATALOG_ENV) or "").strip() or setting.strip() or str(shipped_catalog_path())


def is_url(source: str) -> bool:
    return urlparse(source).scheme in ("http", "https")


def cached_catalog_path(cache_dir: Path) -> Path:
    return cache_dir / "model-catalog.json"


def load_catalog(
    setting: str = "",
    *,
    cache_dir: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> Catalog:
    """The catalog in force, without touching the network.

    A URL source reads its cached copy (see :func:`refresh_catalog`); with none
    yet, or when the file asked for is unreadable, the shipped catalog is used and
    ``note`` says why. The shipped file being broken is a bug: it raises."""
    env = os.environ if environ is None else environ
    source = catalog_source(setting, env)
    shipped = shipped_catalog_path()
    hf_endpoint = env.get("HF_ENDPOINT", "")
    if is_url(source):
        cached = cached_catalog_path(cache_dir) if cache_dir is not None else None
        if cached is not None and cached.is_file():
            try:
                return Catalog(
                    parse_catalog(cached.read_text(encoding="utf-8"), source, hf_endpoint), source
                )
            except (CatalogError, OSError) as exc:
                note = f"The saved copy of the catalog from {source} is unreadable ({exc}); showing the built-in one."
        else:
            note = f"The catalog at {source} has not been fetched yet; showing the built-in one until a refresh."
        return Catalog(
            parse_catalog(shipped.read_text(encoding="utf-8"), str(shipped), hf_endpoint),
            str(shipped),
            note,
        )
    path = Path(source).expanduser()
    try:
        return Catalog(
            parse_catalog(path.read_text(encoding="utf-8"), str(path), hf_endpoint), str(path)
        )
    except (CatalogError, OSError) as exc:
        if path == shipped:
            raise
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        note = f"The model catalog {path} could not be used ({reason}); showing the built-in one."
        return Catalog(
            parse_catalog(shipped.read_text(encoding="utf-8"), str(shipped), hf_endpoint),
            str(shipped),
            note,
        )


def _shipped(hf_endpoint: str, note: str) -> Catalog:
    shipped = shipped_catalog_path()
    return Catalog(
        parse_catalog(shipped.read_text(encoding="utf-8"), str(shipped), hf_endpoint),
        str(shipped),
        note,
    )


def refresh_catalog(
    setting: str = "",
    *,
    cache_dir: Path,
    environ: Mapping[str, str] | None = None,
    timeout_s: float = 20.0,
) -> Catalog:
    """Fetch a URL catalog now (the person asked), keep a copy, and return it.

    For a file source this is :func:`load_catalog`. Raises
    :class:`~app.model_files.download.NoConnection` or :class:`CatalogError`."""
    import httpx

    from app.model_files.download import NoConnection

    env = os.environ if environ is None else environ
    source = catalog_source(setting, env)
    if not is_url(source):
        return load_catalog(setting, cache_dir=cache_dir, environ=env)
    try:
        response = httpx.get(source, timeout=timeout_s, follow_redirects=True)
    except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
        raise NoConnection(
            f"No connection to {urlparse(source).netloc} to fetch the model catalog.",
            "Models already on this machine keep working offline.",
        ) from exc
    except httpx.HTTPError as exc:
        raise CatalogError(f"The model catalog at {source} could not be fetched ({exc}).") from exc
    if response.status_code != 200:
        raise CatalogError(
            f"The model catalog at {source} could not be fetched (HTTP {response.status_code})."
        )
    text = response.text
    catalog = Catalog(parse_catalog(text, source, env.get("HF_ENDPOINT", "")), source)
    target = cached_catalog_path(cache_dir)
    from app.core.settings import write_atomic

    write_atomic(target, text)
    return catalog


def parse_catalog(text: str, source: str, hf_endpoint: str = "") -> tuple[CatalogEntry, ...]:
    """Entries from the catalog's JSON text; a bad entry raises naming it."""
    try:
        data = json.loads(text, parse_constant=_not_a_number)
    except json.JSONDecodeError as exc:
        raise CatalogError(
            f"The model catalog {source} is not valid JSON (line {exc.lineno}: {exc.msg})."
        ) from exc
    except RecursionError:
        raise CatalogError(
            f"The model catalog {source} is nested too deeply to be a catalog."
        ) from None
    except ValueError as exc:  # NaN, Infinity
        raise CatalogError(f"The model catalog {source} is not valid JSON ({exc}).") from None
    models = data.get("models") if isinstance(data, dict) else data
    if not isinstance(models, list):
        raise CatalogError(f'The model catalog {source} has no list of models (a "models" array).')
    entries: list[CatalogEntry] = []
    for index, raw in enumerate(models):
        entry = _entry(raw, f"entry {index + 1} of {source}", hf_endpoint)
        if any(e.id == entry.id for e in entries):
            raise CatalogError(f"The model catalog {source} lists the id '{entry.id}' twice.")
        entries.append(entry)
    return tuple(entries)


def _entry(raw: Any, where: str, hf_endpoint: str) -> CatalogEntry:
    if not isinstance(raw, dict):
        raise CatalogError(f"The model catalog's {where} is not an object.")
    missing = [key for key in REQUIRED if key not in raw]
    if missing:
        raise CatalogError(f"The model catalog's {where} lacks {', '.join(missing)}.")
    entry_id = str(raw["id"])
    if not _ID.match(entry_id):
        raise CatalogError(
            f"The model catalog's {where} has an unusable id '{entry_id}' (letters, digits, . _ : -)."
        )
    sha256 = str(raw["sha256"])
    if not _SHA256.match(sha256):
        raise CatalogError(
            f"The model catalog's entry '{entry_id}' has no valid sha256 (64 hex digits)."
        )
    url, file_name = _location(raw, entry_id, hf_endpoint)
    size_bytes = _number(raw, "size_bytes", entry_id, MAX_SIZE_BYTES)
    ram_gb = _number(raw, "ram_gb", entry_id, MAX_RAM_GB)
    context = _number(raw, "context", entry_id, MAX_CONTEXT)
    if not isinstance(raw["reasoning"], bool):
        raise CatalogError(f"The model catalog's entry '{entry_id}' needs reasoning true or false.")
    return CatalogEntry(
        id=entry_id,
        name=str(raw["name"]),
        url=url,
        file_name=file_name,
        sha256=sha256.lower(),
        size_bytes=int(size_bytes),
        ram_gb=ram_gb,
        context=int(context),
        license=str(raw["license"]),
        reasoning=raw["reasoning"],
        parameters=str(raw.get("parameters", "")),
        quantization=str(raw.get("quantization", "")),
        ollama=str(raw.get("ollama", "")),
        why=str(raw.get("why", "")),
    )


def _number(raw: dict[str, Any], key: str, entry_id: str, most: float) -> float:
    """``raw[key]``, a finite number above 0 and at most ``most``; CatalogError naming it otherwise."""
    value = raw[key]
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise CatalogError(f"The model catalog's entry '{entry_id}' has a non-numeric {key}.")
    try:
        number = float(value)
    except (ValueError, OverflowError):
        raise CatalogError(
            f"The model catalog's entry '{entry_id}' has a non-numeric {key}."
        ) from None
    if not math.isfinite(number) or not 0 < number <= most:
        raise CatalogError(
            f"The model catalog's entry '{entry_id}' has {key} {value!s:.40}, outside 0 to {most:,.0f}."
        )
    return number


def _not_a_number(constant: str) -> float:
    raise ValueError(f"{constant} is not a number a catalog can hold")


def _location(raw: dict[str, Any], entry_id: str, hf_endpoint: str) -> tuple[str, str]:
    """The download URL and the file's name in the models folder."""
    if raw.get("url"):
        url = str(raw["url"])
        if urlparse(url).scheme not in ("http", "https"):
            raise CatalogError(
                f"The model catalog's entry '{entry_id}' has a URL that is not http(s): {url}"
            )
        file_name = str(raw.get("file") or Path(urlparse(url).path).name)
    elif raw.get("hf_repo") and raw.get("hf_file"):
        repo, hf_file = str(raw["hf_repo"]), str(raw["hf_file"])
        revision = str(raw.get("revision") or "main")
        endpoint = (hf_endpoint or HF_DEFAULT_ENDPOINT).rstrip("/")
        url = f"{endpoint}/{quote(repo)}/resolve/{quote(revision, safe='')}/{quote(hf_file)}"
        file_name = str(raw.get("file") or Path(hf_file).name)
    else:
        raise CatalogError(
            f"The model catalog's entry '{entry_id}' has neither a url nor an hf_repo and hf_file."
        )
    if (
        not file_name.lower().endswith(".gguf")
        or "/" in file_name
        or "\\" in file_name
        or file_name.startswith(".")
        or any(
            unicodedata.category(c).startswith("C") for c in file_name
        )  # NUL, controls, RLO and the like
        or len(file_name) > 200
    ):
        raise CatalogError(
            f"The model catalog's entry '{entry_id}' names an unusable file '{file_name}' (*.gguf)."
        )
    return url, file_name
