"""Whether "Open original" may hand a file to the system, or must only show it.

Handing a file to the operating system's default application runs it when it
is a script or a program (a ``.sh`` opened from a file manager, an ``.exe``, a
``.desktop`` launcher, an ``.app`` bundle). Fathom indexes source code and
shell scripts as text, so such files do reach the source viewer. This module
decides, without Qt, what the button does: documents are opened in their
viewer; anything that could run is shown in the file manager instead
("reveal"), with a sentence saying why.

The rule is deliberately cautious: a directory, a name ending in a suffix that
some system runs, a file with any execute bit, or a file that starts like a
program (``#!``, ELF, PE, Mach-O) is revealed, never opened.
"""

from __future__ import annotations

import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

OpenAction = Literal["open", "reveal", "missing"]

# Suffixes that Linux, macOS or Windows runs, installs or interprets when the file
# is "opened" (directly, or through a launcher, an installer or a script host).
RUNNABLE_SUFFIXES: frozenset[str] = frozenset(
    {
        # shells and scripts
        ".sh", ".bash", ".zsh", ".csh", ".ksh", ".fish", ".command", ".tool",
        ".bat", ".cmd", ".btm", ".ps1", ".psm1", ".psd1", ".ps1xml", ".psc1",
        ".py", ".pyw", ".pyz", ".pyzw", ".pyc", ".pyo", ".rb", ".pl", ".php", ".lua", ".tcl",
        ".js", ".jse", ".mjs", ".cjs", ".vbs", ".vbe", ".vb", ".wsf", ".wsh", ".ws", ".hta",
        ".scpt", ".scptd", ".applescript", ".workflow", ".action",
        # programs, launchers and shortcuts
        ".exe", ".com", ".scr", ".pif", ".cpl", ".msc", ".gadget", ".lnk", ".url", ".scf",
        ".inf", ".reg", ".application", ".appref-ms", ".settingcontent-ms", ".library-ms",
        ".app", ".desktop", ".appimage", ".run", ".bin", ".out", ".elf", ".so", ".dll",
        ".jar", ".jnlp", ".xpi", ".crx",
        # installers and packages
        ".msi", ".msp", ".mst", ".msix", ".msixbundle", ".appx", ".appxbundle",
        ".deb", ".rpm", ".pkg", ".mpkg", ".dmg", ".apk", ".snap", ".flatpak", ".flatpakref",
        ".prefpane", ".kext", ".terminal",
    }
)  # fmt: skip

# How programs begin: ELF, Windows PE ("MZ"), Mach-O (both byte orders, 32/64 bit,
# universal), and an interpreter line ("#!").
_PROGRAM_MAGIC: tuple[bytes, ...] = (
    b"\x7fELF",
    b"MZ",
    b"#!",
    b"\xfe\xed\xfa\xce",
    b"\xfe\xed\xfa\xcf",
    b"\xce\xfa\xed\xfe",
    b"\xcf\xfa\xed\xfe",
    b"\xca\xfe\xba\xbe",
)
_EXECUTE_BITS = stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH


@dataclass(frozen=True)
class OpenDecision:
    """What "Open original" does with ``path``, and the sentence that says why."""

    action: OpenAction
    reason: str
    path: Path

    @property
    def opens(self) -> bool:
        return self.action == "open"


def runnable_suffix(path: Path | str) -> str | None:
    """The suffix of ``path`` that some system runs (lower case), or None.

    Trailing dots and spaces are ignored, as Windows ignores them
    (``setup.exe.`` is ``setup.exe``).
    """
    name = Path(path).name.rstrip(". ")
    suffix = Path(name).suffix.lower()
    return suffix if suffix in RUNNABLE_SUFFIXES else None


def _starts_like_a_program(path: Path) -> bool:
    with path.open("rb") as handle:
        head = handle.read(4)
    return any(head.startswith(magic) for magic in _PROGRAM_MAGIC)


def decide_open(path: Path | str) -> OpenDecision:
    """Decide whether ``path`` is opened with its default application or revealed.

    Looks at the name, the file's mode and its first four bytes (a stat and a
    tiny read: cheap enough to call when the viewer shows a source). A symbolic
    link is judged by its own name and by what it points to.
    """
    given = Path(path)
    name = given.name or str(given)
    try:
        target = given.resolve(strict=True)
        info = target.stat()
    except (OSError, RuntimeError):
        return OpenDecision("missing", f"{name} is no longer at {given}.", given)
    if stat.S_ISDIR(info.st_mode):
        kind = (
            "an application bundle"
            if runnable_suffix(given) or runnable_suffix(target)
            else "a folder"
        )
        return OpenDecision(
            "reveal", f"{name} is {kind}: Fathom shows it in the file manager.", given
        )
    suffix = runnable_suffix(given) or runnable_suffix(target)
    if suffix is not None:
        return OpenDecision(
            "reveal",
            f"{name} is a script or program ({suffix}): Fathom shows it in the file manager instead of running it.",
            given,
        )
    if info.st_mode & _EXECUTE_BITS:
        return OpenDecision(
            "reveal",
            f"{name} is marked executable: Fathom shows it in the file manager instead of running it.",
            given,
        )
    try:
        program = _starts_like_a_program(target)
    except OSError as exc:
        return OpenDecision(
            "reveal",
            f"{name} could not be read ({exc.strerror or exc}): Fathom shows it in the file manager.",
            given,
        )
    if program:
        return OpenDecision(
            "reveal",
            f"{name} starts like a program: Fathom shows it in the file manager instead of running it.",
            given,
        )
    return OpenDecision("open", f"Open {name} with the system's default application.", given)
