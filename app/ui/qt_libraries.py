"""Before Qt opens the window on Linux: can its platform plugin load?

Qt's own answer to a missing system library is "Could not load the Qt platform
plugin "xcb"" and an abort. ``cli.py`` asks :func:`qt_libraries_problem` first and,
when the libraries are missing, prints which Debian/Ubuntu packages to install and
exits. This module imports no Qt (it runs before anything loads PySide6), so a
missing ``libEGL.so.1`` is caught here too, not as an ImportError from QtGui.

The decision (:func:`missing_packages_message`) is pure; the probe
(:func:`missing_libraries`) loads the plugin with the dynamic loader, exactly as
Qt would, and on failure lists every missing library with ``ldd``.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import re
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

# The libraries Qt's X11 plugin (libqxcb.so) and the Qt libraries under it
# (XcbQpa, Gui, Widgets, DBus, Core) link, by soname, and the Debian/Ubuntu package
# that ships each; the C/C++ runtime and zlib/zstd that every system has are left out.
# README ("Install and run") and the .deb's Depends (packaging/linux/build_deb.sh) list these
# packages; tests/packaging/test_qt_libraries.py checks all three against PySide6.
X11_LIBRARIES: dict[str, str] = {
    "libEGL.so.1": "libegl1",
    "libGL.so.1": "libgl1",
    "libfontconfig.so.1": "libfontconfig1",
    "libfreetype.so.6": "libfreetype6",
    "libglib-2.0.so.0": "libglib2.0-0",
    "libgthread-2.0.so.0": "libglib2.0-0",
    "libdbus-1.so.3": "libdbus-1-3",
    "libX11.so.6": "libx11-6",
    "libX11-xcb.so.1": "libx11-xcb1",
    "libxcb.so.1": "libxcb1",
    "libxcb-cursor.so.0": "libxcb-cursor0",
    "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-image.so.0": "libxcb-image0",
    "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-randr.so.0": "libxcb-randr0",
    "libxcb-render.so.0": "libxcb-render0",
    "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-shm.so.0": "libxcb-shm0",
    "libxcb-sync.so.1": "libxcb-sync1",
    "libxcb-util.so.1": "libxcb-util1",
    "libxcb-xfixes.so.0": "libxcb-xfixes0",
    "libxcb-xkb.so.1": "libxcb-xkb1",
    "libxkbcommon.so.0": "libxkbcommon0",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
}
# What the Wayland plugin (libqwayland.so) links beyond those.
WAYLAND_LIBRARIES: dict[str, str] = {
    "libwayland-client.so.0": "libwayland-client0",
    "libwayland-cursor.so.0": "libwayland-cursor0",
}
X11_PACKAGES: tuple[str, ...] = tuple(sorted(set(X11_LIBRARIES.values())))

PLUGIN_FILES = {"xcb": "libqxcb.so", "wayland": "libqwayland.so"}

# What a probe says of one plugin file: the sonames it lacks ([] when it loads),
# or None when it cannot tell (then Qt is left to try).
Probe = Callable[[Path], list[str] | None]

_CANNOT_OPEN = re.compile(r"^(?P<soname>[^\s:/]+): cannot open shared object file")


def platforms_to_try(env: Mapping[str, str]) -> list[str]:
    """The platform plugins Qt will try, in order, as its own start-up picks them."""
    requested = env.get("QT_QPA_PLATFORM", "").strip()
    if requested:  # "xcb", "wayland;xcb", "xcb:some-option"
        return [entry.split(":", 1)[0].strip() for entry in requested.split(";") if entry.strip()]
    if env.get("XDG_SESSION_TYPE") == "wayland" or env.get("WAYLAND_DISPLAY"):
        return ["wayland", "xcb"]
    return ["xcb"]


def missing_packages_message(
    platform: str, env: Mapping[str, str], plugins_dir: Path | None, probe: Probe
) -> str | None:
    """What to print instead of starting Qt, or None to go ahead and let Qt start.

    Fathom speaks only when it is sure Qt would fail for want of a library: on
    Linux, with PySide6's own plugins, when every plugin Qt would try (X11, Wayland)
    lacks one. Any other platform (offscreen, eglfs, vnc…), a plugin path of the
    user's own, or a plugin that is not there at all is left to Qt.
    """
    if not platform.startswith("linux") or plugins_dir is None:
        return None
    # Plugins from elsewhere are the user's business; PyInstaller's start-up sets
    # QT_PLUGIN_PATH to the bundle's own plugins, which are the ones checked here.
    own = plugins_dir.parent.resolve()
    elsewhere = [entry for entry in env.get("QT_PLUGIN_PATH", "").split(os.pathsep) if entry]
    if env.get("QT_QPA_PLATFORM_PLUGIN_PATH") or any(
        Path(entry).resolve() != own for entry in elsewhere
    ):
        return None
    missing: list[str] = []
    for name in platforms_to_try(env):
        plugin_file = PLUGIN_FILES.get(name)
        if plugin_file is None or not (plugins_dir / plugin_file).is_file():
            return None
        lacking = probe(plugins_dir / plugin_file)
        if not lacking:
            return None
        missing += [soname for soname in lacking if soname not in missing]
    return explain(missing)


def packages_for(missing: list[str]) -> list[str]:
    """The packages that provide ``missing``; all of Qt's when one is not known."""
    known = {**X11_LIBRARIES, **WAYLAND_LIBRARIES}
    packages = [known[soname] for soname in missing if soname in known]
    if any(soname not in known for soname in missing):
        packages = [*X11_PACKAGES, *packages]
    return list(dict.fromkeys(packages))


def explain(missing: list[str]) -> str:
    return (
        "Fathom cannot open its window: the system libraries Qt needs to draw it are not "
        f"installed ({', '.join(missing)}).\n"
        "On Debian or Ubuntu, install them with:\n"
        f"    sudo apt-get install {' '.join(packages_for(missing))}\n"
        "The commands without a window work already (fathom --help)."
    )


# -- the real probe --------------------------------------------------------------


def qt_plugins_dir() -> Path | None:
    """PySide6's platform plugins (``PySide6/Qt/plugins/platforms``), found without importing it."""
    bundle = getattr(sys, "_MEIPASS", None)
    if bundle is not None:
        package = Path(bundle) / "PySide6"
    else:
        spec = importlib.util.find_spec("PySide6")
        if spec is None or not spec.submodule_search_locations:
            return None
        package = Path(next(iter(spec.submodule_search_locations)))
    folder = package / "Qt" / "plugins" / "platforms"
    return folder if folder.is_dir() else None


def missing_libraries(plugin: Path) -> list[str] | None:
    """The sonames ``plugin`` cannot find: [] when the dynamic loader loads it (as Qt
    would, soon after), None when it fails for another reason (left to Qt)."""
    try:
        ctypes.CDLL(str(plugin))
    except OSError as exc:
        soname = cannot_open(exc)
        if soname is None:
            return None
        return ldd_not_found(plugin) or [soname]
    return []


def cannot_open(exc: BaseException) -> str | None:
    """The soname in the loader's "X: cannot open shared object file", if that is why.

    A frozen program's ctypes (PyInstaller's) raises its own OSError, "Failed to load
    dynlib/dll …", from the loader's, so the whole chain is read."""
    seen: BaseException | None = exc
    while seen is not None:
        match = _CANNOT_OPEN.match(str(seen))
        if match is not None:
            return match["soname"]
        seen = seen.__cause__ or seen.__context__
    return None


def ldd_not_found(library: Path) -> list[str]:
    """Every soname ``ldd`` reports "not found" for ``library`` (its dependencies' too)."""
    env = dict(os.environ)
    bundle = getattr(sys, "_MEIPASS", None)
    if bundle is not None:  # the frozen program's own libraries are found there
        env["LD_LIBRARY_PATH"] = os.pathsep.join(
            p for p in (bundle, env.get("LD_LIBRARY_PATH", "")) if p
        )
    try:
        out = subprocess.run(
            ["ldd", str(library)], env=env, capture_output=True, text=True, timeout=20, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    found = [line.split("=>", 1)[0].strip() for line in out.splitlines() if "=> not found" in line]
    return list(dict.fromkeys(found))


def qt_libraries_problem() -> str | None:
    """The message to print instead of opening the window, or None (go ahead)."""
    return missing_packages_message(sys.platform, os.environ, qt_plugins_dir(), missing_libraries)
