"""Files to chunks: Docling for documents, a plain reader for text and code.

:class:`Converter` is created once (Docling converters are costly to build)
and reused. It checks each file first, so that the usual bad inputs (an empty
file, random bytes named ``.pdf``, a truncated or encrypted PDF, a file that
cannot be read) fail with a sentence a person can act on rather than a parser
trace. Nothing here waits on a network: PDFs use Docling's model-free native
pipeline unless Docling's layout models are present in a local folder.

:class:`ConversionPool` runs the converter in worker processes (Docling holds
the GIL for most of its work; a thread would stall the event loop).
"""

from __future__ import annotations

import asyncio
import io
import logging
import multiprocessing
import os
import re
import warnings
from collections.abc import Callable
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from app.core.errors import IngestError
from app.ingest.chunking import ChunkPiece, DoclingChunker, TokenCounter, chunk_plain_text

# suffix -> Docling input format name
DOCLING_SUFFIXES: dict[str, str] = {
    ".pdf": "pdf",
    ".docx": "docx",
    ".pptx": "pptx",
    ".xlsx": "xlsx",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".md": "md",
    ".markdown": "md",
    ".csv": "csv",
    ".adoc": "asciidoc",
    ".asciidoc": "asciidoc",
}

TEXT_SUFFIXES: frozenset[str] = frozenset(
    {
        ".txt",
        ".text",
        ".rst",
        ".log",
        ".org",
        ".tex",
        ".bib",
        ".srt",
        ".vtt",
        ".json",
        ".jsonl",
        ".yaml",
        ".yml",
        ".toml",
        ".ini",
        ".cfg",
        ".conf",
        ".env.example",
        ".properties",
        ".xml",
        ".svg",
        ".py",
        ".pyi",
        ".ipynb",
        ".r",
        ".jl",
        ".m",
        ".js",
        ".mjs",
        ".cjs",
        ".jsx",
        ".ts",
        ".tsx",
        ".vue",
        ".svelte",
        ".css",
        ".scss",
        ".less",
        ".java",
        ".kt",
        ".kts",
        ".scala",
        ".groovy",
        ".go",
        ".rs",
        ".c",
        ".h",
        ".cc",
        ".cpp",
        ".cxx",
        ".hpp",
        ".hh",
        ".cs",
        ".fs",
        ".swift",
        ".rb",
        ".php",
        ".pl",
        ".pm",
        ".lua",
        ".dart",
        ".ex",
        ".exs",
        ".erl",
        ".hs",
        ".ml",
        ".clj",
        ".elm",
        ".zig",
        ".nim",
        ".v",
        ".sv",
        ".vhd",
        ".sh",
        ".bash",
        ".zsh",
        ".fish",
        ".ps1",
        ".bat",
        ".cmd",
        ".sql",
        ".graphql",
        ".proto",
        ".gradle",
        ".cmake",
        ".mk",
        ".nix",
        ".dockerfile",
        ".tf",
        ".hcl",
    }
)

TEXT_NAMES: frozenset[str] = frozenset(
    {"license", "licence", "readme", "copying", "notice", "authors", "changelog", "makefile", "dockerfile"}
)

FileKind = Literal["docling", "text"]


def file_kind(path: Path) -> FileKind | None:
    """How a file is read, or None when Fathom does not read this type."""
    suffix = path.suffix.lower()
    if suffix in DOCLING_SUFFIXES:
        return "docling"
    if suffix in TEXT_SUFFIXES or path.name.lower() in TEXT_NAMES:
        return "text"
    return None


def supported_types_sentence() -> str:
    kinds = sorted({s.lstrip(".") for s in DOCLING_SUFFIXES})
    return f"Fathom reads {', '.join(kinds)}, plain text and source code."


@dataclass(frozen=True)
class ConvertedDocument:
    title: str
    pieces: tuple[ChunkPiece, ...]
    pages: int | None = None


@dataclass(frozen=True)
class ConverterConfig:
    """What a converter (in this or a worker process) needs; picklable."""

    tokenizer_json: str  # the embedder's tokenizers.Tokenizer as JSON
    max_tokens: int  # per chunk, without special tokens
    docling_artifacts_path: str = ""


def layout_models_present(artifacts_path: str) -> bool:
    """True when ``artifacts_path`` holds Docling's layout model files."""
    if not artifacts_path:
        return False
    folder = Path(artifacts_path).expanduser()
    if not folder.is_dir():
        return False
    return any(
        child.is_dir() and ("docling-layout" in child.name or child.name == "ds4sd--docling-models")
        for child in folder.iterdir()
    )


class Converter:
    """Converts one file at a time into chunk pieces. Not thread-safe: one per worker."""

    def __init__(self, config: ConverterConfig) -> None:
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_str(config.tokenizer_json)
        tokenizer.no_truncation()
        tokenizer.no_padding()
        self.config = config
        self.counter = TokenCounter(tokenizer)
        self._chunker: DoclingChunker | None = None
        self._docling: Any = None
        self.pdf_pipeline = "standard" if layout_models_present(config.docling_artifacts_path) else "native"

    # -- public ---------------------------------------------------------------

    def convert(self, path: Path) -> ConvertedDocument:
        kind = file_kind(path)
        if kind is None:
            raise IngestError(f"Fathom does not read '{path.suffix or path.name}' files.", supported_types_sentence())
        head = self._read_head(path)
        if kind == "text":
            return self._convert_text(path)
        suffix = path.suffix.lower()
        if suffix == ".pdf":
            _check_pdf(path, head)
        elif suffix in {".docx", ".pptx", ".xlsx"} and not head.startswith(b"PK"):
            raise IngestError(
                f"This file is named {suffix} but is not an Office document (it is not a zip package).",
                "It may be damaged, or an older format saved under a new name; open and re-save it.",
            )
        return self._convert_docling(path)

    # -- steps ----------------------------------------------------------------

    @staticmethod
    def _read_head(path: Path) -> bytes:
        try:
            with path.open("rb") as handle:
                head = handle.read(4096)
        except PermissionError:
            raise IngestError(
                "Fathom has no permission to read this file.", "Change its permissions or copy it elsewhere."
            ) from None
        except IsADirectoryError:
            raise IngestError("This is a folder, not a file.") from None
        except OSError as exc:
            raise IngestError(f"The file could not be read ({exc.strerror or exc}).") from None
        if not head:
            raise IngestError("The file is empty; there is nothing to index.")
        return head

    def _convert_text(self, path: Path) -> ConvertedDocument:
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise IngestError(f"The file could not be read ({exc.strerror or exc}).") from None
        text = decode_text(raw)
        if text is None:
            raise IngestError(
                "The file looks binary, not text; Fathom cannot read it.",
                "If it is a document, save it as PDF, DOCX or text.",
            )
        pieces = chunk_plain_text(text, self.counter, self.config.max_tokens)
        if not pieces:
            raise IngestError("The file has no text to index.")
        return ConvertedDocument(title=path.name, pieces=tuple(pieces))

    def _convert_docling(self, path: Path) -> ConvertedDocument:
        from docling.datamodel.base_models import ConversionStatus

        converter = self._converter()
        source: Any = path
        front_title = front_matter = ""
        if path.suffix.lower() in {".md", ".markdown"}:
            source, front_matter, front_title = _markdown_source(path)
        try:
            result = converter.convert(source, raises_on_error=False)
        except Exception as exc:  # Docling raises many types for unreadable input
            raise IngestError(f"Docling could not convert the file: {_short(exc)}.") from None
        if result.status not in (ConversionStatus.SUCCESS, ConversionStatus.PARTIAL_SUCCESS):
            detail = "; ".join(e.error_message for e in result.errors)[:300]
            raise IngestError(f"Docling could not convert the file{': ' + detail if detail else ''}.")
        document = result.document
        with warnings.catch_warnings():
            # HybridChunker warns when headings alone exceed the limit; it then drops them
            warnings.simplefilter("ignore", UserWarning)
            pieces = self._chunker_for().chunk(document)
        if not pieces:
            # e.g. a Markdown file that is only a heading: index what text there is
            pieces = chunk_plain_text(document.export_to_markdown(), self.counter, self.config.max_tokens)
        if not pieces and front_matter:
            pieces = chunk_plain_text(front_matter, self.counter, self.config.max_tokens)
        if not pieces:
            if path.suffix.lower() == ".pdf":
                raise IngestError(
                    "No text could be extracted from this PDF; it is probably scanned images.",
                    "Fathom does not run OCR; convert it with an OCR tool first.",
                )
            raise IngestError("The file has no text to index.")
        pages = document.num_pages() if path.suffix.lower() == ".pdf" else None
        title = front_title or _title_of(document, path)
        return ConvertedDocument(title=title, pieces=tuple(pieces), pages=pages or None)

    def _chunker_for(self) -> DoclingChunker:
        if self._chunker is None:
            self._chunker = DoclingChunker(self.counter, self.config.max_tokens)
        return self._chunker

    def _converter(self) -> Any:
        if self._docling is None:
            self._docling = _build_docling_converter(self.config.docling_artifacts_path, self.pdf_pipeline)
        return self._docling


def _build_docling_converter(artifacts_path: str, pdf_pipeline: str) -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    for name in ("docling", "docling_core", "docling_parse"):
        logging.getLogger(name).setLevel(logging.ERROR)
    from docling.datamodel.base_models import InputFormat
    from docling.document_converter import DocumentConverter, PdfFormatOption

    if pdf_pipeline == "standard":
        from docling.datamodel.pipeline_options import PdfPipelineOptions

        options = PdfPipelineOptions(artifacts_path=artifacts_path, do_ocr=False, enable_remote_services=False)
        pdf_option = PdfFormatOption(pipeline_options=options)
    else:
        from docling.datamodel.pipeline_options import NativePdfPipelineOptions
        from docling.pipeline.native_pdf_pipeline import NativePdfPipeline

        pdf_option = PdfFormatOption(pipeline_cls=NativePdfPipeline, pipeline_options=NativePdfPipelineOptions())
    formats = [
        InputFormat.PDF,
        InputFormat.DOCX,
        InputFormat.PPTX,
        InputFormat.XLSX,
        InputFormat.HTML,
        InputFormat.MD,
        InputFormat.CSV,
        InputFormat.ASCIIDOC,
    ]
    return DocumentConverter(allowed_formats=formats, format_options={InputFormat.PDF: pdf_option})


_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_FRONT_TITLE = re.compile(r"^title:[ \t]*(.+?)[ \t]*$", re.MULTILINE)


def _markdown_source(path: Path) -> tuple[Any, str, str]:
    """Markdown without its YAML front matter (kept out of the chunks), the front
    matter, and its title if it has one."""
    raw = path.read_bytes()
    text = decode_text(raw)
    if text is None:
        return path, "", ""
    match = _FRONT_MATTER.match(text)
    if match is None:
        return path, "", ""
    from docling.datamodel.base_models import DocumentStream

    title_match = _FRONT_TITLE.search(match.group(1))
    title = title_match.group(1).strip().strip("'\"") if title_match else ""
    body = text[match.end() :]
    stream = DocumentStream(name=path.name, stream=io.BytesIO(body.encode("utf-8")))
    return stream, match.group(1), title[:200]


def _check_pdf(path: Path, head: bytes) -> None:
    """Turn pdfium's verdict into a sentence before Docling sees the file."""
    if b"%PDF-" not in head[:1024]:
        raise IngestError(
            "This file is named .pdf but is not a PDF (it does not start with %PDF-).",
            "It may be damaged or another kind of file; open it to check.",
        )
    import pypdfium2

    try:
        document = pypdfium2.PdfDocument(str(path))
    except pypdfium2.PdfiumError as exc:
        message = str(exc).lower()
        if "password" in message:
            raise IngestError(
                "The PDF is encrypted; Fathom cannot read password-protected files.",
                "Save an unprotected copy and add that instead.",
            ) from None
        if _looks_truncated(path):
            raise IngestError(
                "The PDF is damaged or incomplete (it ends before the end of the file).",
                "Download or copy it again.",
            ) from None
        raise IngestError(f"The PDF is damaged and cannot be opened ({exc}).") from None
    try:
        if len(document) == 0:
            raise IngestError("The PDF has no pages.")
    finally:
        document.close()


def _looks_truncated(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            handle.seek(max(0, path.stat().st_size - 2048))
            tail = handle.read()
    except OSError:
        return False
    return b"%%EOF" not in tail


def decode_text(raw: bytes) -> str | None:
    """UTF-8 (with or without BOM), else UTF-16 with BOM, else the encoding
    charset-normalizer finds; None for binary data."""
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return raw.decode("utf-16")
        except UnicodeDecodeError:
            return None
    if b"\x00" in raw[:8192]:
        return None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    best = from_bytes(raw).best()
    if best is None:
        return None
    return str(best)


def _title_of(document: Any, path: Path) -> str:
    from docling_core.types.doc.labels import DocItemLabel

    for item in document.texts:
        if item.label in (DocItemLabel.TITLE, DocItemLabel.SECTION_HEADER) and item.text.strip():
            return str(item.text.strip())[:200]
    return path.name


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:300]


# -- running conversions off the event loop -----------------------------------


@dataclass(frozen=True)
class ConvertOutcome:
    """A worker's answer: a document, or the sentence saying why not."""

    document: ConvertedDocument | None = None
    error: str = ""


_worker_converter: Converter | None = None


def _init_worker(config: ConverterConfig) -> None:
    global _worker_converter
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    _worker_converter = Converter(config)


def _ping() -> int:
    return os.getpid()


def _convert_in_worker(path: str) -> ConvertOutcome:
    converter = _worker_converter
    if converter is None:  # pragma: no cover - the initializer always runs first
        raise RuntimeError("conversion worker not initialised")
    try:
        return ConvertOutcome(document=converter.convert(Path(path)))
    except IngestError as exc:
        return ConvertOutcome(error=str(exc))
    except MemoryError:
        return ConvertOutcome(error="The file is too large to convert in the memory available.")
    except Exception as exc:
        return ConvertOutcome(error=f"Conversion failed unexpectedly: {_short(exc)}.")


ExecutorKind = Literal["process", "thread"]


class ConversionPool:
    """Converters in ``workers`` processes (default) or threads, created once and
    reused; ``convert`` awaits one file without blocking the event loop."""

    def __init__(self, config: ConverterConfig, workers: int = 2, kind: ExecutorKind = "process") -> None:
        self.config = config
        self.workers = max(1, workers)
        self.kind = kind
        self._executor: Executor | None = None
        self._starting = asyncio.Lock()

    def _ensure(self) -> Executor:
        if self._executor is None:
            if self.kind == "process":
                self._executor = ProcessPoolExecutor(
                    max_workers=self.workers,
                    mp_context=multiprocessing.get_context("spawn"),
                    initializer=_init_worker,
                    initargs=(self.config,),
                )
            else:
                self._executor = ThreadPoolExecutor(
                    max_workers=self.workers,
                    thread_name_prefix="fathom-convert",
                    initializer=_init_thread_worker,
                    initargs=(self.config,),
                )
        return self._executor

    async def start(self) -> None:
        """Start the workers from a helper thread: spawning a process (and sending it
        the tokenizer) can take seconds on a busy machine, never on the event loop."""
        async with self._starting:
            if self._executor is None:
                await asyncio.to_thread(self._start_blocking)

    def _start_blocking(self) -> None:
        executor = self._ensure()
        if self.kind == "process":
            pings = [executor.submit(_ping) for _ in range(self.workers)]
            for ping in pings:
                ping.result()

    async def convert(self, path: Path) -> ConvertOutcome:
        loop = asyncio.get_running_loop()
        await self.start()
        fn: Callable[[str], ConvertOutcome] = _convert_in_worker if self.kind == "process" else _convert_in_thread
        try:
            return await loop.run_in_executor(self._ensure(), fn, str(path))
        except Exception as exc:
            from concurrent.futures.process import BrokenProcessPool

            if isinstance(exc, BrokenProcessPool):
                # a worker died (out of memory, a crash in a native parser): start fresh
                self.shutdown()
                return ConvertOutcome(error="The converter crashed on this file (it may be damaged or too large).")
            raise

    def shutdown(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None


_thread_local_converters: dict[int, Converter] = {}


def _init_thread_worker(config: ConverterConfig) -> None:
    import threading

    _thread_local_converters[threading.get_ident()] = Converter(config)


def _convert_in_thread(path: str) -> ConvertOutcome:
    import threading

    converter = _thread_local_converters[threading.get_ident()]
    try:
        return ConvertOutcome(document=converter.convert(Path(path)))
    except IngestError as exc:
        return ConvertOutcome(error=str(exc))
    except Exception as exc:
        return ConvertOutcome(error=f"Conversion failed unexpectedly: {_short(exc)}.")
