"""How much memory and time one file may take to read, and the sentences said when
a file takes more: the worker reading it is killed, the file is named with the
reason, and the ingest goes on with a fresh worker (issue 33).

A file the converter gave up on is remembered by its content hash: a re-scan or a
watch event does not read it again until it changes or the user asks
(``fathom ingest --retry``)."""

from __future__ import annotations

from dataclasses import dataclass

MIB = 1024 * 1024
# the operating system's own ceiling on a worker's address space (Linux), above the
# watchdog's limit on resident memory: a backstop should the watchdog be late. Address
# space counts reserved, untouched memory (a worker reading OCR reserves ~1.9 GB for
# 0.8 GB resident on 2 cores, more with more cores), hence the room.
ADDRESS_SPACE_ROOM_MIB = 4096


@dataclass(frozen=True)
class ConvertLimits:
    """Per file: resident memory of the worker reading it, and seconds."""

    memory_mb: int = 2048
    seconds: float = 120.0  # for any file
    seconds_per_mb: float = 10.0  # more for a larger file
    seconds_per_ocr_page: float = 10.0  # more for each page OCR has read (seconds a page on a CPU)

    @property
    def memory_bytes(self) -> int:
        return self.memory_mb * MIB

    @property
    def address_space_bytes(self) -> int:
        return max(2 * self.memory_mb, self.memory_mb + ADDRESS_SPACE_ROOM_MIB) * MIB

    def seconds_for(self, size_bytes: int, ocr_pages_read: int = 0) -> float:
        """The time a file of ``size_bytes`` may take, once OCR has read ``ocr_pages_read`` of its pages."""
        return (
            self.seconds
            + self.seconds_per_mb * size_bytes / MIB
            + self.seconds_per_ocr_page * ocr_pages_read
        )


# each sentence a give-up starts with: how a re-scan knows not to read the file again
TOO_MUCH_MEMORY = "Reading this file needed more than"
TOO_LONG = "Reading this file took longer than"
CRASHED = "The converter crashed on this file"
NOT_RETRIED = "Not read again until it changes (fathom ingest --retry reads it again)."


def too_much_memory(limits: ConvertLimits) -> str:
    return (
        f"{TOO_MUCH_MEMORY} {limits.memory_mb:,} MB of memory; skipped. It may be damaged or built to "
        f"exhaust memory (a decompression bomb); if it is a genuine file, raise 'Memory per file' in "
        f"Settings. {NOT_RETRIED}"
    )


def too_long(seconds: float) -> str:
    return (
        f"{TOO_LONG} {seconds:,.0f} seconds; skipped. It may be damaged or built to never end; if it is a "
        f"genuine file, raise 'Seconds per file' in Settings. {NOT_RETRIED}"
    )


def crashed() -> str:
    return f"{CRASHED} (it may be damaged or too large). {NOT_RETRIED}"


def gave_up_on(reason: str) -> bool:
    """Whether ``reason`` says the converter gave up on the file (killed or crashed reading it)."""
    return reason.startswith((TOO_MUCH_MEMORY, TOO_LONG, CRASHED))
