"""How a Fathom collection is laid out in Milvus: its name, fields, properties and rows.

One Milvus collection per Fathom collection: the chunk's metadata as scalar
fields, a dense vector field (unit vectors, inner product, so cosine) and a
BM25 sparse field that Milvus fills from ``text`` with :mod:`app.store.bm25_analyzer`
(left out on a Milvus server older than 2.5, which has no BM25: such a collection
is searched by meaning only). The collection's properties record the Fathom name,
the embedding model and dimension it was built with, and the schema version. There
are no migrations yet: version ``1`` is the only layout there has been.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import unicodedata
from collections.abc import Sequence
from typing import Any

import numpy as np

from app.core.errors import EmbeddingMismatch, StoreError
from app.core.models import Chunk
from app.store.bm25_analyzer import ANALYZER

# Collection properties that record who a collection belongs to and how it was built.
PROP_NAME = "fathom.name"
PROP_MODEL = "fathom.embedding_model"
PROP_DIM = "fathom.dimension"

PROP_SCHEMA = "fathom.schema"
SCHEMA_VERSION = "1"

HEADING_SEPARATOR = "\x1f"  # unit separator: never part of a heading
NO_PAGE = -1
MAX_VARCHAR = 65_535  # bytes, Milvus' varchar ceiling
ID_MAX = 512
KEYWORD_FIELD = "sparse"  # BM25's sparse vectors, which Milvus computes from ``text``
OUTPUT_FIELDS = [
    "chunk_id",
    "doc_id",
    "collection",
    "path",
    "title",
    "headings",
    "page",
    "chunk_no",
    "text",
]


# -- names --------------------------------------------------------------------


def milvus_name(name: str) -> str:
    """The Milvus collection name for a Fathom collection name.

    Milvus allows letters, digits and underscores, starting with a letter or an
    underscore, at most 255 characters; Fathom names are any text. The result is
    readable (an ASCII slug) and unique (a hash of the full name), and the same
    on every run, so no separate mapping has to be kept.
    """
    if not name.strip():
        raise StoreError(
            "A collection needs a name.", "Give it a name of at least one visible character."
        )
    folded = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^A-Za-z0-9]+", "_", folded).strip("_").lower()[:48]
    digest = hashlib.sha1(name.encode("utf-8")).hexdigest()[:10]
    return f"fathom_{slug}_{digest}" if slug else f"fathom_{digest}"


def mismatch_message(
    name: str, built_model: str, built_dim: int, model: str, dim: int | None
) -> EmbeddingMismatch:
    """The refusal, with the way out. ``dim`` None: the current model's dimension is not known."""
    current = model if dim is None or built_dim == dim else f"{model} ({dim} dims)"
    shown = shlex.quote(name)
    return EmbeddingMismatch(
        f"Collection '{name}' was built with {built_model} ({built_dim} dims); "
        f"the current embedding model is {current}. "
        f"Re-index it (Re-index in the library's menu, or `fathom reindex --collection {shown}`) "
        "— or switch the embedding model back in Settings."
    )


# -- the collection -------------------------------------------------------------


def create_milvus_collection(
    client: Any,
    name: str,
    dimension: int,
    embedding_model: str,
    *,
    dense_index: dict[str, Any],
    timeout: float | None,
    keyword_search: bool = True,
) -> None:
    """Create the Milvus collection of Fathom collection ``name``, with its indexes;
    ``keyword_search`` False: without the BM25 sparse field (a server older than 2.5)."""
    from pymilvus import DataType, Function, FunctionType, MilvusClient

    if dimension <= 0:
        raise StoreError(f"An embedding dimension must be positive, not {dimension}.")
    metadata = {
        PROP_NAME: name,
        PROP_MODEL: embedding_model,
        PROP_DIM: str(dimension),
        PROP_SCHEMA: SCHEMA_VERSION,
    }
    # Milvus Lite 3.x keeps collection properties; the native 2.5.x keeps the schema's
    # description instead (its properties come back empty): the metadata goes in both.
    schema = MilvusClient.create_schema(
        auto_id=False,
        enable_dynamic_field=False,
        description=json.dumps(metadata, ensure_ascii=False),
    )
    schema.add_field("chunk_id", DataType.VARCHAR, is_primary=True, max_length=ID_MAX)
    schema.add_field("doc_id", DataType.VARCHAR, max_length=ID_MAX)
    schema.add_field("collection", DataType.VARCHAR, max_length=1024)
    schema.add_field("path", DataType.VARCHAR, max_length=MAX_VARCHAR)
    schema.add_field("title", DataType.VARCHAR, max_length=MAX_VARCHAR)
    schema.add_field("headings", DataType.VARCHAR, max_length=MAX_VARCHAR)
    schema.add_field("page", DataType.INT64)
    schema.add_field("chunk_no", DataType.INT64)
    analyzer: dict[str, Any] = (
        {"enable_analyzer": True, "analyzer_params": ANALYZER} if keyword_search else {}
    )
    schema.add_field("text", DataType.VARCHAR, max_length=MAX_VARCHAR, **analyzer)
    schema.add_field("dense", DataType.FLOAT_VECTOR, dim=dimension)
    if keyword_search:
        schema.add_field(KEYWORD_FIELD, DataType.SPARSE_FLOAT_VECTOR)
        schema.add_function(
            Function(
                name="text_bm25",
                function_type=FunctionType.BM25,
                input_field_names=["text"],
                output_field_names=[KEYWORD_FIELD],
            )
        )
    mname = milvus_name(name)
    client.create_collection(
        mname,
        schema=schema,
        properties=metadata,
        # a server otherwise answers from a view up to seconds old (Bounded): a chunk just
        # written or deleted would be missed or found; Milvus Lite is always up to date
        consistency_level="Strong",
        timeout=timeout,
    )
    fields = ("dense", KEYWORD_FIELD) if keyword_search else ("dense",)
    create_indexes(client, mname, dense_index=dense_index, timeout=timeout, fields=fields)


def has_keyword_field(description: dict[str, Any]) -> bool:
    """Whether a collection, from ``describe_collection``'s answer, has the BM25 field
    (not one made on a Milvus server older than 2.5)."""
    return any(field.get("name") == KEYWORD_FIELD for field in description.get("fields") or [])


def collection_metadata(description: dict[str, Any]) -> dict[str, str]:
    """Fathom's metadata of a Milvus collection from ``describe_collection``'s answer:
    its properties (Milvus Lite 3.x, servers), else its description (Milvus Lite 2.5)."""
    props = {str(k): str(v) for k, v in (description.get("properties") or {}).items()}
    if PROP_NAME in props:
        return props
    try:
        data = json.loads(str(description.get("description") or ""))
    except ValueError:
        return props
    if isinstance(data, dict) and PROP_NAME in data:
        return {str(k): str(v) for k, v in data.items()}
    return props


def dense_dimension(description: dict[str, Any]) -> int:
    """The dense field's dimension as Milvus reports it (0 when absent)."""
    for field in description.get("fields") or []:
        if field.get("name") == "dense":
            try:
                return int((field.get("params") or {}).get("dim", 0))
            except (TypeError, ValueError):
                return 0
    return 0


# BM25's saturation and length normalisation, set rather than left to each engine's
# default (the native Milvus Lite and servers: k1=1.2; Milvus Lite 3.x: k1=1.5), so a
# library ranks the same on every engine. 1.2 / 0.75 are the usual (Lucene) values.
BM25_K1 = 1.2
BM25_B = 0.75
BM25_PARAMS: dict[str, Any] = {"bm25_k1": BM25_K1, "bm25_b": BM25_B}


def create_indexes(
    client: Any,
    mname: str,
    *,
    dense_index: dict[str, Any],
    timeout: float | None,
    fields: tuple[str, ...] = ("dense", KEYWORD_FIELD),
) -> None:
    """The dense (embedding) and sparse (BM25) indexes of Milvus collection ``mname``
    (those of ``fields``)."""
    index = client.prepare_index_params()
    if "dense" in fields:
        index.add_index("dense", metric_type="IP", **dense_index)
    if KEYWORD_FIELD in fields:
        index.add_index(
            KEYWORD_FIELD,
            index_type="SPARSE_INVERTED_INDEX",
            metric_type="BM25",
            params=BM25_PARAMS,
        )
    # sync=False: pymilvus would otherwise poll AllocTimestamp, which Milvus Lite lacks.
    client.create_index(mname, index, timeout=timeout, sync=False)


# -- rows -----------------------------------------------------------------------


def safe_text(text: str) -> str:
    """Text Milvus can carry: a file name that is not UTF-8 (lone surrogates from
    ``os.fsdecode``) keeps a visible, stable spelling instead of failing the insert."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _clip(text: str, limit: int = MAX_VARCHAR) -> str:
    text = safe_text(text)
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[:limit].decode("utf-8", "ignore")


def unit_vectors(vectors: Sequence[Sequence[float]] | np.ndarray, dim: int) -> np.ndarray:
    """``vectors`` as float32 rows of length one (inner product is then cosine similarity)."""
    array = np.asarray(vectors, dtype=np.float32)
    if array.ndim != 2 or array.shape[1] != dim:
        raise StoreError(
            f"Expected vectors of {dim} dimensions, got an array of shape {array.shape}."
        )
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    return array / np.where(norms == 0, 1.0, norms)


def chunk_to_row(chunk: Chunk, vector: np.ndarray) -> dict[str, Any]:
    return {
        "chunk_id": chunk.chunk_id,
        "doc_id": chunk.doc_id,
        "collection": _clip(chunk.collection, 1024),
        "path": _clip(chunk.path),
        "title": _clip(chunk.title),
        "headings": _clip(HEADING_SEPARATOR.join(chunk.headings)),
        "page": NO_PAGE if chunk.page is None else int(chunk.page),
        "chunk_no": int(chunk.chunk_no),
        "text": _clip(chunk.text),
        "dense": vector.tolist(),
    }


def row_to_chunk(entity: dict[str, Any]) -> Chunk:
    headings = entity.get("headings") or ""
    page = int(entity.get("page", NO_PAGE))
    return Chunk(
        chunk_id=str(entity["chunk_id"]),
        doc_id=str(entity.get("doc_id", "")),
        collection=str(entity.get("collection", "")),
        path=str(entity.get("path", "")),
        text=str(entity.get("text", "")),
        title=str(entity.get("title", "")),
        headings=tuple(headings.split(HEADING_SEPARATOR)) if headings else (),
        page=None if page == NO_PAGE else page,
        chunk_no=int(entity.get("chunk_no", 0)),
    )
