"""A report's provenance: what it was made from and by, so that a reader can audit it
later — the question, when, which Fathom, the mode and budget, the research model (its
name, and the SHA-256 of its GGUF file), the embedding model, the collections searched,
how its sentences were checked, and each source as it was when indexed (path, size,
modification time, SHA-256).

The model file's digest is computed once per file (a few seconds for gigabytes) and
kept in the cache folder, keyed by the file's path, size and modification time.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from app import __version__
from app.core.ids import doc_id_of_chunk
from app.core.models import Budget, Evidence, Provenance, Report, SourceRecord
from app.core.paths import app_paths
from app.llm.starter import is_starter

if TYPE_CHECKING:  # the exporters read provenance without loading the library
    from app.ingest.library import Library
    from app.llm.base import ChatModel

log = logging.getLogger(__name__)

DIGESTS_FILE = "model-digests.json"
# above a starter model's report, in the window, the exports and `fathom show`
STARTER_HEADER = (
    "Written by the starter model: a tiny model for a first try, not for real research."
)


def file_digest(path: Path, cache: Path | None = None, *, compute: bool = True) -> str:
    """``sha256:…`` of the file at ``path``, remembered in ``cache`` (a JSON file) by
    the file's path, size and modification time; "" when it cannot be read, or is not
    remembered and ``compute`` is False."""
    try:
        stat = path.stat()
    except OSError:
        return ""
    key = f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}"
    known: dict[str, str] = {}
    if cache is not None:
        try:
            loaded = json.loads(cache.read_text(encoding="utf-8"))
            known = {str(k): str(v) for k, v in loaded.items()} if isinstance(loaded, dict) else {}
        except (OSError, ValueError):
            known = {}
        if key in known:
            return known[key]
    if not compute:
        return ""
    digest = hashlib.sha256()
    try:
        with path.open("rb") as fh:
            while block := fh.read(1 << 20):
                digest.update(block)
    except OSError:
        return ""
    value = f"sha256:{digest.hexdigest()}"
    if cache is not None:
        try:
            cache.parent.mkdir(parents=True, exist_ok=True)
            cache.write_text(json.dumps({**known, key: value}, indent=1), encoding="utf-8")
        except OSError:
            pass  # the digest is still right; it is only computed again next time
    return value


def model_file(model: ChatModel) -> Path | None:
    path = getattr(model, "model_path", None)
    return path if isinstance(path, Path) else None


async def build(
    *,
    question: str,
    started_at: float,
    mode: str,
    budget: Budget,
    model: ChatModel,
    library: Library,
    collections: Sequence[str],
    report: Report,
    hash_model: bool = True,
) -> Provenance:
    """The provenance of ``report`` (see the module); ``hash_model`` False: the model
    file's digest only if it is remembered (a stopped run ends without reading gigabytes)."""
    path = model_file(model)
    digest = ""
    if path is not None:
        cache = app_paths().cache_dir / DIGESTS_FILE
        digest = await asyncio.to_thread(file_digest, path, cache, compute=hash_model)
    else:
        digest = await ollama_digest(model)
    try:
        embedding = await library.embedding_model()
    except Exception:  # an embedding server gone away: the rest is still worth keeping
        embedding = ""
    return Provenance(
        question=question,
        started_at=started_at,
        fathom_version=__version__,
        mode=mode,
        budget=budget,
        model=str(getattr(model, "model_name", "")),
        model_file=str(path) if path is not None else "",
        model_digest=digest,
        starter=is_starter(model),
        embedding_model=embedding,
        collections=tuple(collections),
        checked_by=report.support.checked_by if report.support is not None else "",
        sources=await source_records(library, report.evidence),
    )


async def ollama_digest(model: ChatModel) -> str:
    """The digest Ollama gives the model a run used ("" for another back end, or when
    Ollama does not say)."""
    # a model made by the Ollama back end means its module is loaded; importing it
    # here for another back end would hold the event loop (the GUI's) for a moment
    backend = sys.modules.get("app.llm.ollama_backend")
    if backend is None or not isinstance(model, backend.OllamaModel):
        return ""
    from app.llm.ollama_client import ollama_models_if_running

    listed = await ollama_models_if_running(model.host)
    name = model.model_name
    for entry in listed or []:
        if entry.name == name or entry.name == f"{name}:latest":
            return entry.digest
    return ""


async def source_records(
    library: Library, evidence: Sequence[Evidence]
) -> tuple[SourceRecord, ...]:
    """Each source as the library recorded its file when indexing it, in number order."""
    docs = await library.documents_by_id([doc_id_of_chunk(e.chunk_id) for e in evidence])
    records = []
    for e in sorted(evidence, key=lambda item: item.number):
        doc = docs.get(doc_id_of_chunk(e.chunk_id))
        if doc is None:  # removed from the library since: what the evidence says of it
            records.append(SourceRecord(number=e.number, path=e.path))
        else:
            records.append(
                SourceRecord(
                    number=e.number,
                    path=doc.path,
                    size=doc.size,
                    mtime=doc.mtime,
                    sha256=doc.content_hash,
                )
            )
    return tuple(records)


def describe(provenance: Provenance) -> list[str]:
    """The provenance as lines of plain text (``key: value``), for exports and ``fathom show``."""
    when = time.strftime("%Y-%m-%d %H:%M:%S %z", time.localtime(provenance.started_at))
    b = provenance.budget
    model = provenance.model + (
        " — the starter model, for a first try, not for real research" if provenance.starter else ""
    )
    lines = [
        f"Question: {provenance.question}",
        f"Asked: {when}",
        f"Fathom: {provenance.fathom_version}",
        f"Mode: {provenance.mode}",
        f"Budget: {b.max_rounds} rounds, {b.max_subqueries} sub-queries a round, {b.max_search_calls} searches, "
        f"{b.max_tokens} tokens, {b.max_seconds:g} s, top {b.top_k}",
        f"Research model: {model}",
    ]
    if provenance.model_file:
        lines.append(
            f"Model file: {provenance.model_file} ({provenance.model_digest or 'digest unknown'})"
        )
    elif provenance.model_digest:
        lines.append(f"Model digest: {provenance.model_digest}")
    lines += [
        f"Embedding model: {provenance.embedding_model or 'unknown'}",
        f"Collections searched: {', '.join(provenance.collections) or 'all'}",
        f"Sentences checked by: {provenance.checked_by or 'nothing independent of the writer (not verified)'}",
    ]
    for source in provenance.sources:
        changed = (
            time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(source.mtime))
            if source.mtime
            else "unknown"
        )
        lines.append(
            f"Source [{source.number}]: {source.path} — {source.size:,} bytes, modified {changed}, "
            f"sha256 {source.sha256 or 'unknown'}"
        )
    return lines
