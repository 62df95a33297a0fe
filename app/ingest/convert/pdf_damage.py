"""Whether a PDF's compressed parts can be read: a damaged file (bits flipped in a copy,
a bad download) is often repaired on opening and read in part, its broken pages simply
empty; without this the user saw "1 of 4 pages read by OCR" and nothing about the damage.

Each Flate-compressed stream is inflated from its first 64 KiB only: enough to find a
broken one, never a decompression bomb's worth. The file is mapped, not read: a large PDF
costs no more memory than a small one (it was read whole, and each stream copied)."""

from __future__ import annotations

import mmap
import re
import zlib
from pathlib import Path

_STREAM = re.compile(rb"stream\r?\n")
_DICT_LOOKBACK = 2048  # bytes before "stream" where its dictionary is
_PROBE = 64 * 1024


def broken_streams(path: Path) -> tuple[int, int]:
    """(Flate streams that cannot be inflated, Flate streams) in the PDF at ``path``."""
    with path.open("rb") as handle:
        if path.stat().st_size == 0:
            return 0, 0  # nothing to map
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return _broken_streams(data)


def _broken_streams(data: mmap.mmap) -> tuple[int, int]:
    if data.find(b"/Encrypt") >= 0:
        return 0, 0  # encrypted streams (an owner password only) do not inflate as they are
    broken = total = 0
    for match in _STREAM.finditer(data):
        start = match.end()
        head = data[max(0, match.start() - _DICT_LOOKBACK) : match.start()]
        opened = head.rfind(b"<<")
        if opened < 0 or not head.rstrip().endswith(b">>"):
            continue  # the word "stream" in text, not a stream
        dictionary = head[opened:]
        plain_flate = b"/FlateDecode" in dictionary and b"/DecodeParms" not in dictionary
        if not plain_flate or b"[" in dictionary.split(b"/Filter")[-1][:3]:
            continue  # only plain Flate (predictors and filter chains are left to the reader)
        end = data.find(b"endstream", start)
        if end < 0:
            end = len(data)
        total += 1
        try:
            zlib.decompressobj().decompress(data[start : min(end, start + _PROBE)], _PROBE)
        except zlib.error:
            broken += 1
    return broken, total


def damage_note(path: Path) -> str:
    """A few words on the damage the PDF has ("" when none is found)."""
    try:
        broken, total = broken_streams(path)
    except OSError:
        return ""
    if not broken:
        return ""
    return f"the file is damaged: {broken} of {total} compressed parts could not be read; indexed what could be read"
