"""When Qt's window-system libraries are missing, ``fathom`` names the packages to install.

The decision is tested case by case with a stand-in probe; the probe itself on real
shared objects built here with ``cc`` (one of them needs a library that does not
exist); and ``fathom`` end to end, on a PySide6 whose X11 plugin needs that library.
The package table is checked against the PySide6 that is installed (``readelf``) and
the Debian package database (``dpkg -S``), and the README and the .deb against it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from app.ui import qt_libraries
from app.ui.qt_libraries import (
    WAYLAND_LIBRARIES,
    X11_LIBRARIES,
    X11_PACKAGES,
    missing_libraries,
    missing_packages_message,
    platforms_to_try,
    qt_plugins_dir,
)

REPO = Path(__file__).resolve().parents[2]
GONE = "libfathom-gone.so.1"  # a library the test builds, links against, then deletes


def plugins(tmp_path: Path, *names: str) -> Path:
    folder = tmp_path / "platforms"
    folder.mkdir(exist_ok=True)
    for name in names:
        (folder / name).write_bytes(b"")
    return folder


def probe_from(table: dict[str, list[str] | None]) -> qt_libraries.Probe:
    return lambda plugin: table[plugin.name]


# -- the decision, case by case ---------------------------------------------------


def test_xcb_missing_libraries_name_their_packages_in_one_apt_command(tmp_path: Path) -> None:
    folder = plugins(tmp_path, "libqxcb.so")
    message = missing_packages_message(
        "linux",
        {},
        folder,
        probe_from({"libqxcb.so": ["libxcb-icccm.so.4", "libxcb-keysyms.so.1"]}),
    )
    assert message is not None
    assert "(libxcb-icccm.so.4, libxcb-keysyms.so.1)" in message
    assert "\n    sudo apt-get install libxcb-icccm4 libxcb-keysyms1\n" in message


def test_a_library_that_loads_or_cannot_be_judged_lets_qt_start(tmp_path: Path) -> None:
    folder = plugins(tmp_path, "libqxcb.so")
    assert missing_packages_message("linux", {}, folder, probe_from({"libqxcb.so": []})) is None
    assert missing_packages_message("linux", {}, folder, probe_from({"libqxcb.so": None})) is None


@pytest.mark.parametrize(
    "env",
    [
        {"QT_QPA_PLATFORM": "offscreen"},
        {"QT_QPA_PLATFORM": "eglfs"},
        {"QT_QPA_PLATFORM": "xcb;offscreen"},  # Qt falls back to one Fathom does not check
        {"QT_QPA_PLATFORM_PLUGIN_PATH": "/somewhere/of/the/users"},
        {"QT_PLUGIN_PATH": "/somewhere/of/the/users"},
    ],
)
def test_other_platforms_and_the_users_own_plugins_are_left_to_qt(
    tmp_path: Path, env: dict[str, str]
) -> None:
    folder = plugins(tmp_path, "libqxcb.so")
    assert (
        missing_packages_message("linux", env, folder, probe_from({"libqxcb.so": ["libEGL.so.1"]}))
        is None
    )


@pytest.mark.parametrize("platform", ["win32", "darwin"])
def test_only_linux_is_checked(tmp_path: Path, platform: str) -> None:
    folder = plugins(tmp_path, "libqxcb.so")
    assert (
        missing_packages_message(platform, {}, folder, probe_from({"libqxcb.so": ["libEGL.so.1"]}))
        is None
    )


def test_no_plugin_folder_or_no_plugin_file_is_left_to_qt(tmp_path: Path) -> None:
    probe = probe_from({"libqxcb.so": ["libEGL.so.1"]})
    assert missing_packages_message("linux", {}, None, probe) is None
    assert missing_packages_message("linux", {}, plugins(tmp_path), probe) is None


def test_qt_plugin_path_naming_pyside6s_own_plugins_is_still_checked(tmp_path: Path) -> None:
    """PyInstaller's start-up sets QT_PLUGIN_PATH to the bundle's own plugin folder."""
    folder = plugins(tmp_path, "libqxcb.so")
    env = {"QT_PLUGIN_PATH": f"{tmp_path}{os.pathsep}"}
    assert (
        missing_packages_message("linux", env, folder, probe_from({"libqxcb.so": ["libEGL.so.1"]}))
        is not None
    )


def test_qt_qpa_platform_xcb_is_checked_like_the_default(tmp_path: Path) -> None:
    folder = plugins(tmp_path, "libqxcb.so")
    probe = probe_from({"libqxcb.so": ["libEGL.so.1"]})
    message = missing_packages_message("linux", {"QT_QPA_PLATFORM": "xcb"}, folder, probe)
    assert message is not None and "sudo apt-get install libegl1\n" in message


def test_on_wayland_a_working_wayland_plugin_is_enough(tmp_path: Path) -> None:
    folder = plugins(tmp_path, "libqxcb.so", "libqwayland.so")
    env = {"XDG_SESSION_TYPE": "wayland"}
    probe = probe_from({"libqwayland.so": [], "libqxcb.so": ["libxcb-cursor.so.0"]})
    assert missing_packages_message("linux", env, folder, probe) is None


def test_on_wayland_with_both_plugins_broken_both_are_named(tmp_path: Path) -> None:
    folder = plugins(tmp_path, "libqxcb.so", "libqwayland.so")
    env = {"WAYLAND_DISPLAY": "wayland-0"}
    probe = probe_from(
        {"libqwayland.so": ["libwayland-cursor.so.0"], "libqxcb.so": ["libxcb-cursor.so.0"]}
    )
    message = missing_packages_message("linux", env, folder, probe)
    assert message is not None
    assert "sudo apt-get install libwayland-cursor0 libxcb-cursor0\n" in message


def test_an_unknown_library_asks_for_every_package_qt_needs(tmp_path: Path) -> None:
    folder = plugins(tmp_path, "libqxcb.so")
    message = missing_packages_message(
        "linux", {}, folder, probe_from({"libqxcb.so": [GONE, "libEGL.so.1"]})
    )
    assert message is not None and GONE in message
    assert f"sudo apt-get install {' '.join(X11_PACKAGES)}\n" in message


def test_platforms_qt_tries() -> None:
    assert platforms_to_try({}) == ["xcb"]
    assert platforms_to_try({"XDG_SESSION_TYPE": "x11", "DISPLAY": ":0"}) == ["xcb"]
    assert platforms_to_try({"XDG_SESSION_TYPE": "wayland"}) == ["wayland", "xcb"]
    assert platforms_to_try({"QT_QPA_PLATFORM": "wayland;xcb"}) == ["wayland", "xcb"]
    assert platforms_to_try({"QT_QPA_PLATFORM": "xcb:nomitshm", "WAYLAND_DISPLAY": "w"}) == ["xcb"]


# -- the probe, on real shared objects ---------------------------------------------


def build_library(folder: Path, name: str, *needs: str, search: Path | None = None) -> Path:
    """A shared object named ``name`` whose NEEDED entries are ``needs`` (built with cc)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.fail(
            "these tests build small shared objects: install a C compiler (build-essential)"
        )
    folder.mkdir(parents=True, exist_ok=True)
    source = folder / f"{name}.c"
    source.write_text("int fathom_stand_in(void) { return 1; }\n")
    links = [f"-l:{need}" for need in needs]
    built = subprocess.run(
        [cc, "-shared", "-fPIC", "-o", str(folder / name), f"-Wl,-soname,{name}", str(source),
         f"-L{search or folder}", "-Wl,--no-as-needed", *links],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    source.unlink()
    return folder / name


def plugin_needing_gone_libraries(folder: Path, *gone: str) -> Path:
    for name in gone:
        build_library(folder / "stubs", name)
    plugin = build_library(folder, "libqxcb.so", "libm.so.6", *gone, search=folder / "stubs")
    shutil.rmtree(folder / "stubs")
    return plugin


def test_probe_names_every_library_the_loader_cannot_find(tmp_path: Path) -> None:
    plugin = plugin_needing_gone_libraries(tmp_path / "platforms", GONE, "libfathom-gone-too.so.2")
    assert missing_libraries(plugin) == [GONE, "libfathom-gone-too.so.2"]


def test_probe_finds_nothing_missing_in_a_library_that_loads(tmp_path: Path) -> None:
    assert missing_libraries(build_library(tmp_path, "libqxcb.so", "libm.so.6")) == []


def test_probe_leaves_a_file_that_is_not_a_library_to_qt(tmp_path: Path) -> None:
    broken = tmp_path / "libqxcb.so"
    broken.write_bytes(b"not an ELF file")
    assert missing_libraries(broken) is None


def test_the_loaders_reason_is_found_under_pyinstallers_own_error() -> None:
    loader = OSError(f"{GONE}: cannot open shared object file: No such file or directory")
    frozen = OSError(
        "Failed to load dynlib/dll '/opt/fathom/_internal/PySide6/Qt/plugins/platforms/libqxcb.so'."
    )
    frozen.__cause__ = loader
    assert qt_libraries.cannot_open(frozen) == GONE
    assert qt_libraries.cannot_open(loader) == GONE
    assert qt_libraries.cannot_open(OSError("libqxcb.so: undefined symbol: xcb_foo")) is None


def test_probe_agrees_with_ldd_on_the_installed_pyside6() -> None:
    folder = qt_plugins_dir()
    assert folder is not None and (folder / "libqxcb.so").is_file()
    for name in ("libqxcb.so", "libqwayland.so"):
        assert missing_libraries(folder / name) == qt_libraries.ldd_not_found(folder / name), name


# -- `fathom` end to end -------------------------------------------------------------


def test_fathom_prints_the_packages_instead_of_qts_abort(tmp_path: Path) -> None:
    """A PySide6 whose X11 plugin needs a library that is not there: no Qt message, no abort."""
    fake = tmp_path / "site" / "PySide6"
    (fake / "Qt" / "plugins").mkdir(parents=True)
    (fake / "__init__.py").write_text("raise SystemExit('PySide6 was imported before the check')\n")
    plugin_needing_gone_libraries(fake / "Qt" / "plugins" / "platforms", GONE)
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DISPLAY", "WAYLAND_DISPLAY", "XDG_SESSION_TYPE"}
    }
    env.update(PYTHONPATH=str(tmp_path / "site"), QT_QPA_PLATFORM="xcb")
    fathom = Path(sys.executable).parent / "fathom"

    result = subprocess.run(
        [str(fathom)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )

    report = f"exit {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    assert result.returncode == 1, report
    assert (
        f"Fathom cannot open its window: the system libraries Qt needs to draw it are not installed ({GONE})"
        in (result.stderr)
    ), report
    assert f"    sudo apt-get install {' '.join(X11_PACKAGES)}\n" in result.stderr, report
    assert "qt.qpa" not in result.stderr and "Traceback" not in result.stderr, report
    assert result.stdout == "", report


# -- the table, against PySide6, Debian, the README and the .deb -----------------------

RUNTIME = re.compile(
    r"^(libc|libm|libgcc_s|libstdc\+\+|libz|libzstd|ld-linux.*|libicu\w+|libQt6\w+)\.so"
)


def needed(library: Path) -> set[str]:
    out = subprocess.run(
        ["readelf", "-d", str(library)], capture_output=True, text=True, check=True
    ).stdout
    return set(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out))


def test_the_table_names_every_library_qts_x11_and_wayland_plugins_link() -> None:
    folder = qt_plugins_dir()
    assert folder is not None
    lib = folder.parents[1] / "lib"
    x11 = [
        folder / "libqxcb.so",
        *(lib / f"libQt6{name}.so.6" for name in ("XcbQpa", "Gui", "Widgets", "DBus", "Core")),
    ]
    wayland = [folder / "libqwayland.so", lib / "libQt6WaylandClient.so.6"]
    x11_needs = {so for file in x11 for so in needed(file) if not RUNTIME.match(so)}
    wayland_needs = {so for file in wayland for so in needed(file) if not RUNTIME.match(so)}
    assert x11_needs == set(X11_LIBRARIES)
    assert wayland_needs - x11_needs == set(WAYLAND_LIBRARIES)


def test_each_library_here_comes_from_the_package_the_table_names() -> None:
    if shutil.which("dpkg") is None:
        pytest.fail(
            "this test reads the Debian package database: run it on Debian/Ubuntu (as CI does)"
        )
    checked = 0
    for soname, package in {**X11_LIBRARIES, **WAYLAND_LIBRARIES}.items():
        owner = subprocess.run(
            ["dpkg", "-S", f"*/{soname}"], capture_output=True, text=True, check=False
        )
        if owner.returncode != 0:
            continue  # not installed here (the probe test covers what is missing)
        owners = {line.split(":", 1)[0].removesuffix("t64") for line in owner.stdout.splitlines()}
        assert package in owners, f"{soname}: the table says {package}, dpkg says {owners}"
        checked += 1
    assert checked >= len(X11_LIBRARIES) - 4


def test_readme_installs_the_packages_the_table_names() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    commands = [
        line for line in readme.splitlines() if line.strip().startswith("sudo apt-get install lib")
    ]
    assert f"sudo apt-get install {' '.join(X11_PACKAGES)}" in [c.strip() for c in commands], (
        commands
    )


def test_the_deb_depends_on_the_packages_the_table_names(tmp_path: Path) -> None:
    """build_deb.sh, run on a stand-in for the PyInstaller folder: its Depends field."""
    if shutil.which("dpkg-deb") is None:
        pytest.fail("this test builds a .deb: run it on Debian/Ubuntu (as CI does)")
    dist = tmp_path / "fathom"
    dist.mkdir()
    (dist / "fathom").write_text("#!/bin/sh\necho fathom\n")
    (dist / "fathom").chmod(0o755)
    built = subprocess.run(
        [str(REPO / "packaging" / "linux" / "build_deb.sh"), str(dist), str(tmp_path / "out")],
        capture_output=True, text=True, timeout=300, check=False, env=dict(os.environ, DEB_COMPRESSION="gzip"),
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    deb = built.stdout.strip().splitlines()[-1]
    depends = subprocess.run(
        ["dpkg-deb", "-f", deb, "Depends"], capture_output=True, text=True, check=True
    ).stdout
    declared = {entry.strip().split(" ")[0] for entry in depends.split(",")}
    assert {*X11_PACKAGES, "libwayland-client0"} <= declared, depends
