"""GGUF models already on this computer: Fathom's own, GPT4All's and LM Studio's.

So nobody downloads a model twice, Fathom looks where those tools keep their
downloads (and where GPT4All's settings say it keeps them) and reads each file's
header. A file that cannot be read is still listed, with the reason.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from app.model_files.gguf_info import GgufError, GgufInfo, read_gguf_info

__all__ = [
    "LocalModel",
    "ModelFolder",
    "add_model_file",
    "find_local_models",
    "known_model_folders",
]


@dataclass(frozen=True)
class ModelFolder:
    """A folder that holds GGUF models, and which tool put them there."""

    source: str  # "fathom" | "gpt4all" | "lmstudio"
    path: Path


@dataclass(frozen=True)
class LocalModel:
    """A GGUF file found on disk; ``info`` is None when its header could not be read."""

    source: str
    path: Path
    info: GgufInfo | None
    problem: str = ""  # why the header could not be read (info is None then)


def known_model_folders(
    fathom_models_dir: Path,
    *,
    home: Path | None = None,
    environ: Mapping[str, str] | None = None,
    system: str | None = None,
) -> list[ModelFolder]:
    """The model folders that exist: Fathom's, then GPT4All's, then LM Studio's.

    ``home``, ``environ`` and ``system`` default to this computer's; tests pass their own.
    """
    home = Path.home() if home is None else home
    environ = os.environ if environ is None else environ
    system = platform.system() if system is None else system

    candidates = [ModelFolder("fathom", fathom_models_dir)]
    candidates += [ModelFolder("gpt4all", path) for path in _gpt4all_folders(home, environ, system)]
    candidates += [
        ModelFolder("lmstudio", home / ".lmstudio" / "models"),
        ModelFolder("lmstudio", home / ".cache" / "lm-studio" / "models"),
    ]
    folders: list[ModelFolder] = []
    seen: set[Path] = set()
    for folder in candidates:
        if not folder.path.is_dir():
            continue
        resolved = _resolve(folder.path)
        if resolved not in seen:
            seen.add(resolved)
            folders.append(folder)
    return folders


def find_local_models(folders: Sequence[ModelFolder]) -> list[LocalModel]:
    """Every GGUF model in ``folders`` (searched recursively), each file once.

    Partial downloads, hidden files, vision projectors (``mmproj``) and the later
    parts of split models are left out. Never raises: a file whose header cannot be
    read is listed with ``problem`` set.
    """
    models: list[LocalModel] = []
    seen: set[Path] = set()
    for folder in folders:
        for path in _gguf_files(folder.path):
            resolved = _resolve(path)
            if resolved in seen:
                continue
            seen.add(resolved)
            try:
                models.append(LocalModel(folder.source, path, read_gguf_info(path)))
            except GgufError as exc:
                models.append(LocalModel(folder.source, path, None, problem=str(exc)))
    return models


# -- GPT4All ---------------------------------------------------------------------


def _gpt4all_folders(home: Path, environ: Mapping[str, str], system: str) -> list[Path]:
    """GPT4All's default download folder, and the one its settings name, if any."""
    if system == "Windows":
        local = environ.get("LOCALAPPDATA") or str(home / "AppData" / "Local")
        roaming = environ.get("APPDATA") or str(home / "AppData" / "Roaming")
        default = Path(local) / "nomic.ai" / "GPT4All"
        settings = Path(roaming) / "nomic.ai" / "GPT4All.ini"
    elif system == "Darwin":
        default = home / "Library" / "Application Support" / "nomic.ai" / "GPT4All"
        settings = home / ".config" / "nomic.ai" / "GPT4All.ini"
    else:
        data = environ.get("XDG_DATA_HOME") or str(home / ".local" / "share")
        config = environ.get("XDG_CONFIG_HOME") or str(home / ".config")
        default = Path(data) / "nomic.ai" / "GPT4All"
        settings = Path(config) / "nomic.ai" / "GPT4All.ini"
    folders = [default]
    configured = _gpt4all_model_path(settings, home)
    if configured is not None:
        folders.append(configured)
    return folders


def _gpt4all_model_path(settings: Path, home: Path) -> Path | None:
    """The ``modelPath=`` a GPT4All.ini (written by Qt's QSettings) names, if any."""
    try:
        text = settings.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() == "modelPath":
            value = _qsettings_unescape(value.strip())
            if not value:
                return None
            if value == "~" or value.startswith(("~/", "~\\")):
                return home / value[2:]
            return Path(value)
    return None


def _qsettings_unescape(value: str) -> str:
    """Undo QSettings' ini quoting: surrounding quotes, ``\\\\``, ``\\"`` and ``\\xNNNN``."""
    if len(value) >= 2 and value[0] == value[-1] == '"':
        value = value[1:-1]
    return re.sub(
        r"\\(x[0-9a-fA-F]{1,4}|.)",
        lambda m: (
            chr(int(m.group(1)[1:], 16))
            if m.group(1)[0] == "x" and len(m.group(1)) > 1
            else m.group(1)
        ),
        value,
    )


# -- walking ----------------------------------------------------------------------

_LATER_SPLIT_PART = re.compile(r"-(\d{5})-of-\d{5}\.gguf$", re.IGNORECASE)


def _is_model_file(name: str) -> bool:
    lower = name.lower()
    if name.startswith(".") or not lower.endswith(".gguf"):
        return False
    if "mmproj" in lower or lower.startswith(
        "incomplete-"
    ):  # projector; GPT4All's partial download
        return False
    part = _LATER_SPLIT_PART.search(lower)
    return (
        part is None or int(part.group(1)) <= 1
    )  # llama.cpp opens a split model by its first part


def _gguf_files(root: Path) -> Iterator[Path]:
    """GGUF files under ``root`` in a stable order; symlinked folders are followed once."""
    visited: set[tuple[int, int]] = set()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True, onerror=lambda _exc: None):
        try:
            stat = os.stat(dirpath)
        except OSError:
            dirnames[:] = []
            continue
        identity = (stat.st_dev, stat.st_ino)
        if identity in visited:  # a link back into a folder already searched
            dirnames[:] = []
            continue
        visited.add(identity)
        dirnames[:] = sorted(name for name in dirnames if not name.startswith("."))
        for name in sorted(filenames):
            path = Path(dirpath) / name
            if _is_model_file(name) and path.is_file():
                yield path


def _resolve(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:
        return path.absolute()


def add_model_file(source: Path, models_dir: Path, *, link: bool) -> Path:
    """Put a GGUF file into Fathom's models folder, linked (the file stays where it is)
    or copied (written beside as ``.part``, renamed when whole); its header is read
    first, so a file that is not a GGUF model is refused with the reason
    (:class:`GgufError`). Returns the path in the models folder; a file already there
    (by name, of the same size) is left as it is."""
    name = Path(source).name  # the name the user knows it by (a link's, not its target's)
    source = _resolve(Path(source))
    read_gguf_info(source)  # refuses what llama.cpp could not load, before anything is written
    models_dir.mkdir(parents=True, exist_ok=True)
    target = models_dir / name
    if target.exists() or target.is_symlink():
        if _resolve(target) == source or (
            target.is_file() and target.stat().st_size == source.stat().st_size
        ):
            return target
        raise GgufError(f"The models folder already has another file named {name}.")
    if link:
        target.symlink_to(source)
        return target
    partial = target.with_name(target.name + ".part")
    try:
        shutil.copyfile(source, partial)
        os.replace(partial, target)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return target
