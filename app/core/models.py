"""Domain data types shared by every layer.

Plain frozen dataclasses: no behaviour beyond small derived properties, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from enum import StrEnum


@dataclass(frozen=True)
class Usage:
    """Cost of one model call, or the sum of many."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    model: str = ""
    calls: int = 1

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        models = {m for m in (self.model, other.model) if m}
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            latency_s=self.latency_s + other.latency_s,
            model=",".join(sorted(models)),
            calls=self.calls + other.calls,
        )


ZERO_USAGE = Usage(calls=0)


class DocumentStatus(StrEnum):
    """Where a document is in its life; ``app/store/ledger.py`` owns the transitions."""

    PENDING = "pending"  # known, not (fully) indexed: any chunks it has are stale
    WRITING = "writing"  # its chunk_count chunks are being written to the vector store
    INDEXED = "indexed"  # all chunk_count chunks are durable in the vector store
    REMOVING = "removing"  # being removed: its chunks, then its entry, go
    FAILED = "failed"  # could not be read (error says why); no chunks
    SKIPPED = "skipped"  # left out on purpose (error says why); no chunks


@dataclass(frozen=True)
class Collection:
    """A named set of documents, one Milvus collection."""

    name: str
    description: str = ""
    embedding_model: str = ""
    dimension: int = 0
    documents: int = 0
    chunks: int = 0
    watched: bool = True  # its folders are followed: changes on disk are indexed without asking


@dataclass(frozen=True)
class Document:
    """One source file in a collection."""

    doc_id: str
    collection: str
    path: str
    content_hash: str = ""
    size: int = 0
    mtime: float = 0.0
    status: DocumentStatus = DocumentStatus.PENDING
    error: str = ""
    chunk_count: int = 0
    title: str = ""


@dataclass(frozen=True)
class Chunk:
    """A passage of a document, the unit of retrieval and citation."""

    chunk_id: str
    doc_id: str
    collection: str
    path: str
    text: str
    title: str = ""
    headings: tuple[str, ...] = ()
    page: int | None = None
    chunk_no: int = 0

    @property
    def heading_path(self) -> str:
        return " > ".join(self.headings)


@dataclass(frozen=True)
class Hit:
    """A chunk returned by a search, with its score (higher is better)."""

    chunk: Chunk
    score: float
    query: str = ""


@dataclass(frozen=True)
class SubQuery:
    """A search the research loop decided to run."""

    node_id: str
    text: str
    round_no: int = 0
    collections: tuple[str, ...] = ()
    parent_id: str = ""


class EvidenceStatus(StrEnum):
    SUPPORTING = "supporting"
    CONTRADICTING = "contradicting"
    UNVERIFIED = "unverified"


@dataclass(frozen=True)
class Evidence:
    """A relevant chunk: what found it, the quote, where it lives."""

    number: int  # the [n] a report cites
    chunk_id: str
    subquery: str
    quote: str
    path: str
    page: int | None = None
    collection: str = ""
    title: str = ""
    status: EvidenceStatus = EvidenceStatus.UNVERIFIED

    @property
    def location(self) -> str:
        """Its file, and its page where it has one: ``/docs/a.pdf, page 3``."""
        return self.path + (f", page {self.page}" if self.page is not None else "")


@dataclass(frozen=True)
class Citation:
    """One ``[n]`` in a report, with the sentence it backs."""

    number: int
    sentence: str
    supported: bool | None = None  # None: not checked
    note: str = ""


@dataclass(frozen=True)
class SentenceSupport:
    """How well a report's sentences are backed: of ``sentences`` prose sentences,
    ``cited`` carry a citation and ``flagged`` were found unsupported by theirs."""

    sentences: int = 0
    cited: int = 0
    flagged: int = 0
    # what checked the cited sentences, as the header says it ("word and meaning overlap");
    # empty: nothing independent of the writer did (a partial report, or one from an older Fathom)
    checked_by: str = ""

    @property
    def supported(self) -> int:
        """Cited sentences the check did not flag."""
        return max(0, self.cited - self.flagged)

    @property
    def share(self) -> float:
        """Cited sentences over all sentences (0 when there are none)."""
        return self.cited / self.sentences if self.sentences else 0.0


@dataclass(frozen=True)
class TableCell:
    value: str = ""
    confidence: float = 0.0
    chunk_id: str = ""
    quote: str = ""


@dataclass(frozen=True)
class EntityTable:
    """Table mode's result: one row per entity, one cell per attribute."""

    entity_type: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, tuple[TableCell, ...]], ...] = ()  # (entity name, cells)


@dataclass(frozen=True)
class SourceRecord:
    """A source of a report as it was when it was indexed: which file, how big, when
    last changed, and its content's SHA-256 (what a reader checks a copy against)."""

    number: int
    path: str
    size: int = 0
    mtime: float = 0.0  # seconds since the epoch
    sha256: str = ""


@dataclass(frozen=True)
class Provenance:
    """What a report was made from and by, for a reader auditing it later."""

    question: str
    started_at: float  # seconds since the epoch
    fathom_version: str
    mode: str
    budget: Budget
    model: str
    model_file: str = ""  # the GGUF file a llama.cpp model ran from
    model_digest: str = ""  # "sha256:…" of that file, or the server's digest; "" unknown
    starter: bool = False  # written by the starter model (a first try, not real research)
    embedding_model: str = ""
    collections: tuple[str, ...] = ()
    checked_by: str = ""  # how its sentences were checked (empty: not independently)
    sources: tuple[SourceRecord, ...] = ()


@dataclass(frozen=True)
class Report:
    """The finished answer of a research run."""

    markdown: str
    evidence: tuple[Evidence, ...] = ()
    citations: tuple[Citation, ...] = ()
    open_questions: tuple[str, ...] = ()
    removed_citations: int = 0
    table: EntityTable | None = None
    answer: str = ""  # short answer, when a mode extracts one (hds, benchmarks)
    support: SentenceSupport | None = None  # None: written before sentences were counted
    # the evidence numbers the report writer was shown, and those the short answer read
    # (the research-quality funnel: what a run found, what its report and answer used)
    written_from: tuple[int, ...] = ()
    answer_from: tuple[int, ...] = ()
    provenance: Provenance | None = None  # None: from a Fathom before provenance was kept
    # False: the documents found do not answer the question, and the report says so first;
    # None: not judged (a partial report, or one from an earlier Fathom)
    answered: bool | None = None


@dataclass(frozen=True, kw_only=True)
class IngestCounts:
    """An ingest run's files by how they ended, and the chunks it wrote: one type for
    the run's tally, its IngestFinished event and its row in the catalog."""

    indexed: int = 0
    unchanged: int = 0
    skipped: int = 0
    failed: int = 0
    removed: int = 0
    chunks: int = 0

    @property
    def done(self) -> int:
        """Files done, however they ended."""
        return self.indexed + self.unchanged + self.skipped + self.failed + self.removed

    def counted(self, status: str, chunks: int = 0) -> IngestCounts:
        """These counts and one more file that ended as ``status`` (``chunks`` written if indexed)."""
        if status == "indexed":
            return replace(self, indexed=self.indexed + 1, chunks=self.chunks + chunks)
        if status in ("unchanged", "skipped", "failed", "removed"):
            return replace(self, **{status: getattr(self, status) + 1})
        return self

    def counts(self) -> IngestCounts:
        """Just the counts (of an event or a catalog row that carries them)."""
        return IngestCounts(**{f.name: getattr(self, f.name) for f in fields(IngestCounts)})


@dataclass(frozen=True)
class Budget:
    """Limits of one research run; the first one exhausted stops it."""

    max_rounds: int = 3
    max_subqueries: int = 4
    max_search_calls: int = 24
    max_tokens: int = 60_000
    max_seconds: float = 600.0
    max_concurrent_calls: int = 2
    top_k: int = 6


@dataclass(frozen=True)
class Scope:
    """Which collections a run may read (empty: all)."""

    collections: tuple[str, ...] = field(default_factory=tuple)
