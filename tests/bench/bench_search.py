"""Search latency of the vector store on Milvus Lite, against numpy brute force.

    .venv/bin/python tests/bench/bench_search.py [--sizes 10000 100000] [--calls 20] [--also PYTHON]

``--also PYTHON`` runs the same bench, size by size, in another environment's
interpreter too (e.g. one with the other Milvus Lite engine: the native 2.5 and the
pure-Python 3.x cannot share one), and ends with one table of both engines and numpy
side by side: each engine's row next to the numpy figures of its own process.

For each corpus size: dense, BM25 and hybrid (RRF) search through
``app.store.vectors.VectorStore`` (the code the app runs, chunk fields fetched),
one query per call and 8 queries in one call, p50/p95 per call and per
sub-query; then the same searches done by numpy in the same process on the same
data: a matrix product for dense, a vectorised inverted index with the same
analyzer and BM25 formula for BM25, and the same RRF for hybrid. Agreement: the
share of the exact top 10 (numpy) that the engine returns; numpy cuts words and
scores as Milvus does (a query word counts as often as the query repeats it), so
what is left is each engine's own approximation (ANN for dense, statistics kept per
segment for BM25).

The corpus: real text (paragraphs of ../shared/data/milvus-docs and the MuSiQue
corpus; past that, each row joins halves of two random real paragraphs, so the
term statistics stay those of real text). Vectors: the first --real rows are real
MiniLM embeddings of their paragraphs, the rest mixtures of two of those plus
noise (embedding 100k chunks would take over an hour on two cores; search cost
does not depend on what the vectors mean, and mixtures keep the clustered shape
that ANN recall depends on; --random-vectors gives the uniform worst case).
Queries: 8 real MuSiQue questions, embedded for real. The store is written,
flushed, closed and reopened (load_collection) before timing, as after an app
start. For steadier numbers on a shared machine run it with
OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 (both sides then use one core).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

from app.core.models import Chunk  # noqa: E402
from app.store import dense_cache, vectors  # noqa: E402
from app.store.bm25_analyzer import words  # noqa: E402
from app.store.milvus_connection import lite_major_version  # noqa: E402
from app.store.milvus_schema import BM25_B, BM25_K1  # noqa: E402
from app.store.vectors import STOP_WORDS, VectorStore, milvus_name  # noqa: E402

sys.path.insert(0, str(REPO / "tests"))
from locate_data import shared_data_dir  # noqa: E402

DATA = shared_data_dir()
DIM = 384
BATCH = 8
TOP_K = 10


# -- corpus -----------------------------------------------------------------------


def real_paragraphs() -> list[str]:
    out: list[str] = []
    for page in sorted((DATA / "milvus-docs").rglob("*.md")):
        text = re.sub(r"<[^>]+>", " ", page.read_text(encoding="utf-8"))
        for block in re.split(r"\n\s*\n", text):
            block = " ".join(block.split())
            if len(block) > 80:
                out.append(block[:1500])
    for item in json.loads((DATA / "musique" / "corpus.json").read_text(encoding="utf-8")):
        out.append(f"{item['title']}. {item['text']}"[:1500])
    return out


def corpus_texts(n: int, rng: np.random.Generator) -> list[str]:
    pool = real_paragraphs()
    texts = pool[:n]
    while len(texts) < n:
        a, b = rng.integers(0, len(pool), size=2)
        first, second = pool[a], pool[b]
        texts.append(first[: len(first) // 2] + " " + second[len(second) // 2 :])
    return texts


def unit_rows(n: int, rng: np.random.Generator) -> np.ndarray:
    x = rng.standard_normal((n, DIM), dtype=np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def embedding_like_rows(
    texts: list[str], n: int, real: int, rng: np.random.Generator
) -> np.ndarray:
    """The first ``real`` rows are real MiniLM embeddings of their texts; the rest
    mix two of those with noise, so the vectors keep the clustered shape of real
    embeddings (uniform random vectors are a worst case no ANN index meets)."""
    from app.ingest.embedder import OnnxMiniLMEmbedder

    start = time.perf_counter()
    base = OnnxMiniLMEmbedder(batch_size=16).embed([t[:600] for t in texts[:real]])
    print(f"  embedded {real} real paragraphs in {time.perf_counter() - start:.0f} s", flush=True)
    a = rng.integers(0, real, size=n - real)
    b = rng.integers(0, real, size=n - real)
    mixed = base[a] + 0.5 * base[b] + 0.08 * rng.standard_normal((n - real, DIM), dtype=np.float32)
    rows = np.concatenate([base, mixed]).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


# -- numpy brute force ----------------------------------------------------------------


class NumpyBM25:
    """BM25 (Milvus' formula, Fathom's k1 and b) over postings held as numpy arrays."""

    def __init__(self, texts: list[str]) -> None:
        vocabulary: dict[str, int] = {}
        term_ids: list[np.ndarray] = []
        lengths = np.zeros(len(texts), dtype=np.float32)
        for i, text in enumerate(
            texts
        ):  # word ids per text: flat arrays, not a dict per term (1M rows)
            ids = [vocabulary.setdefault(t, len(vocabulary)) for t in words(text)]
            lengths[i] = len(ids)
            term_ids.append(np.array(ids, dtype=np.int64))
        doc_of = np.repeat(np.arange(len(texts), dtype=np.int64), lengths.astype(np.int64))
        pairs, tf = np.unique(np.concatenate(term_ids) * len(texts) + doc_of, return_counts=True)
        terms_sorted, docs_sorted = pairs // len(texts), pairs % len(texts)
        bounds = np.searchsorted(terms_sorted, np.arange(len(vocabulary) + 1))
        self.n = len(texts)
        avgdl = float(lengths.mean()) or 1.0
        self.terms: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for term, t in vocabulary.items():
            ids = docs_sorted[bounds[t] : bounds[t + 1]]
            freq = tf[bounds[t] : bounds[t + 1]].astype(np.float32)
            idf = math.log((self.n - len(ids) + 0.5) / (len(ids) + 0.5) + 1.0)
            norm = (
                freq
                * (BM25_K1 + 1)
                / (freq + BM25_K1 * (1 - BM25_B + BM25_B * lengths[ids] / avgdl))
            )
            self.terms[term] = (ids, (idf * norm).astype(np.float32))

    def search(self, queries: list[str], k: int) -> list[np.ndarray]:
        out = []
        for q in queries:
            scores = np.zeros(self.n, dtype=np.float32)
            for t, times in Counter(words(q)).items():
                hit = self.terms.get(t)
                if hit is not None:
                    scores[hit[0]] += times * hit[1]
            top = np.argpartition(-scores, k)[:k]
            top = top[np.argsort(-scores[top])]
            out.append(top[scores[top] > 0])
        return out


def numpy_dense(matrix: np.ndarray, queries: np.ndarray, k: int) -> list[np.ndarray]:
    sims = queries @ matrix.T
    top = np.argpartition(-sims, k, axis=1)[:, :k]
    return [row[np.argsort(-sims[i, row])] for i, row in enumerate(top)]


def rrf(lists: list[np.ndarray], k: int) -> np.ndarray:
    scores: dict[int, float] = defaultdict(float)
    for ranked in lists:
        for rank, doc in enumerate(ranked.tolist()):
            scores[doc] += 1.0 / (60 + rank + 1)
    return np.array(sorted(scores, key=scores.__getitem__, reverse=True)[:k])


# -- timing -------------------------------------------------------------------------------


def timed(fn: Callable[[int], object], calls: int, warmup: int = 2) -> list[float]:
    for i in range(warmup):
        fn(i)
    out = []
    for i in range(calls):
        start = time.perf_counter()
        fn(i)
        out.append(time.perf_counter() - start)
    return out


def pct(xs: list[float], p: float) -> float:
    return float(np.percentile(np.array(xs) * 1000.0, p))


def report(label: str, per_call: list[float], batch: int) -> dict[str, float]:
    per_query = [x / batch for x in per_call]
    row = {
        "call_p50_ms": pct(per_call, 50),
        "call_p95_ms": pct(per_call, 95),
        "subquery_p50_ms": pct(per_query, 50),
        "subquery_p95_ms": pct(per_query, 95),
    }
    print(
        f"  {label:<26} batch {batch}:  per call p50 {row['call_p50_ms']:8.1f}  p95 {row['call_p95_ms']:8.1f} ms"
        f"   per sub-query p50 {row['subquery_p50_ms']:7.1f}  p95 {row['subquery_p95_ms']:7.1f} ms",
        flush=True,
    )
    return row


# -- one corpus size ---------------------------------------------------------------------------


def bench_size(
    n: int,
    calls: int,
    workdir: Path,
    seed: int,
    random_vectors: bool,
    real: int,
    split: float = 0.0,
) -> dict[str, dict[str, float]]:
    rng = np.random.default_rng(seed)
    texts = corpus_texts(n, rng)
    questions = [
        q["question"] for q in json.loads((DATA / "musique" / "questions.json").read_text())[:BATCH]
    ]
    if random_vectors:
        matrix, qvecs = unit_rows(n, rng), unit_rows(BATCH, rng)
    else:
        from app.ingest.embedder import OnnxMiniLMEmbedder

        matrix = embedding_like_rows(texts, n, min(n, real), rng)
        qvecs = OnnxMiniLMEmbedder().embed(questions)

    uri = str(workdir / f"bench-{n}.db")
    start = time.perf_counter()
    with VectorStore(uri) as store:
        store.ensure_collection("bench", DIM, "random-unit-vectors")
        for s in range(0, n, 2000):
            chunks = [
                Chunk(
                    f"c{i}",
                    f"d{i // 20}",
                    "bench",
                    f"/bench/doc{i // 20}.md",
                    texts[i],
                    chunk_no=i % 20,
                )
                for i in range(s, min(n, s + 2000))
            ]
            store.insert("bench", chunks, matrix[s : s + len(chunks)])
        inserted = time.perf_counter() - start
        store.flush("bench")
    written = time.perf_counter() - start
    files = [Path(uri)] if Path(uri).is_file() else [f for f in Path(uri).rglob("*") if f.is_file()]
    size_mb = sum(f.stat().st_size for f in files) / 1e6
    print(
        f"\n== {n:,} chunks: insert {inserted:.1f} s, + flush/index {written - inserted:.1f} s "
        f"({n / written:,.0f} rows/s), {size_mb:.0f} MB on disk",
        flush=True,
    )

    results: dict[str, dict[str, float]] = {}
    start = time.perf_counter()
    store = VectorStore(uri)
    assert store.count("bench") == n
    opened = time.perf_counter() - start
    print(f"  reopen + load_collection + count: {opened:.2f} s")
    copy = store._copy(milvus_name("bench"))
    copied = 0.0
    if copy is not None:
        if not copy.wait_ready(600):
            raise SystemExit("the in-memory copy of the vectors was not filled within 10 minutes")
        copied = time.perf_counter() - start - opened
        print(
            f"  dense vectors copied into memory (faiss fp16) in the background: {copied:.2f} s more"
        )
    results["open"] = {
        "seconds": opened,
        "copy_seconds": copied,
        "copied": float(copy is not None),
        "insert_rows_per_s": n / written,
        "mb_on_disk": size_mb,
    }
    bm25 = NumpyBM25(texts)

    def run_modes(prefix: str, modes: tuple[str, ...]) -> None:
        for mode in modes:
            for batch in (1, BATCH):

                def run(i: int, mode: str = mode, batch: int = batch) -> object:
                    pick = [(i * batch + j) % BATCH for j in range(batch)]
                    return store.search(
                        "bench",
                        [questions[j] for j in pick],
                        qvecs[pick],
                        mode=mode,
                        top_k=TOP_K,  # type: ignore[arg-type]
                    )

                results[f"{prefix}/{mode}/{batch}"] = report(
                    f"{prefix} {mode}", timed(run, calls), batch
                )

    try:
        run_modes("milvus_lite", ("dense", "bm25", "hybrid"))
        results["agreement"] = agreement(store, questions, qvecs, matrix, bm25)
        if split:
            results.update(bench_split(store, split, texts, matrix, questions, qvecs, bm25, calls))
        if copy is not None:  # the same searches without the copy: Milvus Lite's own scan
            dense_cache.drop(store._copies or {}, milvus_name("bench"))
            run_modes("milvus_scan", ("dense", "hybrid"))
            results["agreement_scan"] = agreement(store, questions, qvecs, matrix, bm25)
    finally:
        store.close()
    for mode in ("dense", "bm25", "hybrid"):
        for batch in (1, BATCH):

            def brute(i: int, mode: str = mode, batch: int = batch) -> object:
                pick = [(i * batch + j) % BATCH for j in range(batch)]
                if mode == "dense":
                    return numpy_dense(matrix, qvecs[pick], TOP_K)
                if mode == "bm25":
                    return bm25.search([questions[j] for j in pick], TOP_K)
                pool = max(2 * TOP_K, 20)
                dense = numpy_dense(matrix, qvecs[pick], pool)
                sparse = bm25.search([questions[j] for j in pick], pool)
                return [rrf([d, s], TOP_K) for d, s in zip(dense, sparse, strict=True)]

            results[f"numpy/{mode}/{batch}"] = report(
                f"numpy brute force {mode}", timed(brute, calls), batch
            )
    return results


def write_parts(
    store: VectorStore, parts: dict[str, range], texts: list[str], matrix: np.ndarray
) -> None:
    for name, rows in parts.items():
        store.ensure_collection(name, DIM, "random-unit-vectors")
        for s in range(rows.start, rows.stop, 2000):
            chunks = [
                Chunk(
                    f"c{i}",
                    f"d{i // 20}",
                    name,
                    f"/bench/doc{i // 20}.md",
                    texts[i],
                    chunk_no=i % 20,
                )
                for i in range(s, min(rows.stop, s + 2000))
            ]
            store.insert(name, chunks, matrix[s : s + len(chunks)])
        store.flush(name)


def wait_for_library(store: VectorStore, names: list[str]) -> float:
    """Seconds until each collection's in-memory copy and word statistics are ready."""
    start = time.perf_counter()
    for name in names:
        store.word_stats(name)
        mname = milvus_name(name)
        for ready in (store._word_stats.get(mname), store._copy(mname)):
            if ready is not None and not ready.wait_ready(600):
                raise SystemExit(f"{name}: not ready within 10 minutes")
    return time.perf_counter() - start


def bench_split(
    store: VectorStore,
    split: float,
    texts: list[str],
    matrix: np.ndarray,
    questions: list[str],
    qvecs: np.ndarray,
    bm25: NumpyBM25,
    calls: int,
) -> dict[str, dict[str, float]]:
    """The same rows in two collections (the last ``split`` of them in the small one),
    searched together: latency, and agreement with the exact answer over all the rows
    (numpy), as one library should rank them; beside it the old merge of each
    collection's own hybrid scores."""
    n = len(texts)
    cut = n - max(1, int(n * split))
    parts = {"part_big": range(0, cut), "part_small": range(cut, n)}
    names = list(parts)
    start = time.perf_counter()
    write_parts(store, parts, texts, matrix)
    written = time.perf_counter() - start
    ready = wait_for_library(store, names)
    print(
        f"\n  -- the same rows in two collections ({cut:,} + {n - cut:,}): written in {written:.1f} s, "
        f"copies and word statistics ready {ready:.1f} s later",
        flush=True,
    )
    results: dict[str, dict[str, float]] = {"split_open": {"written_s": written, "ready_s": ready}}
    for mode in ("dense", "bm25", "hybrid"):
        for batch in (1, BATCH):

            def run(i: int, mode: str = mode, batch: int = batch) -> object:
                pick = [(i * batch + j) % BATCH for j in range(batch)]
                return store.search_library(
                    names,
                    [questions[j] for j in pick],
                    qvecs[pick],
                    mode=mode,
                    top_k=TOP_K,  # type: ignore[arg-type]
                )

            results[f"split/{mode}/{batch}"] = report(
                f"two collections {mode}", timed(run, calls), batch
            )
    pool = max(2 * TOP_K, 20)
    exact = {
        "dense": numpy_dense(matrix, qvecs, TOP_K),
        "bm25": bm25.search(questions, TOP_K),
        "hybrid": [
            rrf([d, s], TOP_K)
            for d, s in zip(
                numpy_dense(matrix, qvecs, pool), bm25.search(questions, pool), strict=True
            )
        ],
    }
    out: dict[str, float] = {}
    for mode, want in exact.items():
        got = store.search_library(names, questions, qvecs, mode=mode, top_k=TOP_K)  # type: ignore[arg-type]
        out[f"{mode}_overlap_at_{TOP_K}"] = overlap(
            [[int(h.chunk.chunk_id[1:]) for h in hits] for hits in got], want
        )
    # before: each collection's own hybrid (RRF) scores merged as if comparable
    each = [store.search(name, questions, qvecs, mode="hybrid", top_k=TOP_K) for name in names]
    merged = [
        sorted((h for found in each for h in found[i]), key=lambda h: -h.score)[:TOP_K]
        for i in range(BATCH)
    ]
    out[f"merged_hybrid_overlap_at_{TOP_K}"] = overlap(
        [[int(h.chunk.chunk_id[1:]) for h in hits] for hits in merged], exact["hybrid"]
    )
    print(
        f"  two collections ranked as one, top-{TOP_K} overlap with exact numpy over all rows: dense "
        f"{out['dense_overlap_at_10']:.2f}, BM25 {out['bm25_overlap_at_10']:.2f}, hybrid "
        f"{out['hybrid_overlap_at_10']:.2f} (each collection's own hybrid scores merged: "
        f"{out['merged_hybrid_overlap_at_10']:.2f})",
        flush=True,
    )
    results["split_agreement"] = out
    for name in names:
        store.drop_collection(name)
    return results


def overlap(got: list[list[int]], want: list[np.ndarray]) -> float:
    return float(
        np.mean(
            [
                len(set(g) & set(w.tolist())) / max(1, min(TOP_K, len(w)))
                for g, w in zip(got, want, strict=True)
            ]
        )
    )


def agreement(
    store: VectorStore, questions: list[str], qvecs: np.ndarray, matrix: np.ndarray, bm25: NumpyBM25
) -> dict[str, float]:
    """Top-10 overlap of Milvus Lite with the exact numpy answers (dense: the
    recall of the ANN index or the copy; BM25: Lite scores per segment, numpy over all rows)."""
    lite = {
        mode: [
            [int(h.chunk.chunk_id[1:]) for h in hits]
            for hits in store.search("bench", questions, qvecs, mode=mode, top_k=TOP_K)  # type: ignore[arg-type]
        ]
        for mode in ("dense", "bm25")
    }
    exact = {"dense": numpy_dense(matrix, qvecs, TOP_K), "bm25": bm25.search(questions, TOP_K)}
    out = {}
    for mode in ("dense", "bm25"):
        overlaps = [
            len(set(got) & set(want.tolist())) / max(1, min(TOP_K, len(want)))
            for got, want in zip(lite[mode], exact[mode], strict=True)
        ]
        out[f"{mode}_overlap_at_{TOP_K}"] = float(np.mean(overlaps))
    print(
        f"  top-{TOP_K} overlap with exact numpy: dense {out[f'dense_overlap_at_{TOP_K}']:.2f}"
        f" (recall), BM25 {out[f'bm25_overlap_at_{TOP_K}']:.2f}",
        flush=True,
    )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--calls", type=int, default=20, help="timed calls per configuration")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument(
        "--random-vectors", action="store_true", help="uniform random vectors (ANN worst case)"
    )
    parser.add_argument(
        "--real", type=int, default=1000, help="rows with real embeddings (default 1000)"
    )
    parser.add_argument(
        "--dense-index", help="e.g. FLAT, IVF_FLAT, HNSW (default: Fathom's choice per engine)"
    )
    parser.add_argument(
        "--split",
        type=float,
        default=0.1,
        help="also search the rows split in two collections, this share in the small one (0: not)",
    )
    parser.add_argument(
        "--also",
        action="append",
        default=[],
        metavar="PYTHON",
        help="run it in this interpreter too, side by side",
    )
    args = parser.parse_args()
    if args.also:
        return compare(args)

    from importlib.metadata import version

    native = 0 < lite_major_version() < 3
    name = "NATIVE_DENSE_INDEX" if native else "DENSE_INDEX"
    if args.dense_index:
        setattr(vectors, name, {**getattr(vectors, name), "index_type": args.dense_index})
    chosen = getattr(vectors, name)
    dense_index = f"{chosen['index_type']} {chosen.get('params', {})}"
    engine = version("milvus-lite")
    if chosen["index_type"] == "AUTOINDEX" and not native:
        from milvus_lite.index.factory import is_faiss_available

        dense_index += (
            " = HNSW (faiss-cpu)" if is_faiss_available() else " = BRUTE_FORCE (no faiss-cpu)"
        )
    print(f"Milvus Lite {engine}, pymilvus {version('pymilvus')}")
    kind = (
        "uniform random"
        if args.random_vectors
        else f"embedding-like ({args.real} real MiniLM rows + mixtures)"
    )
    print(
        f"dense index: {dense_index}; vectors: {kind}; BM25 analyzer: {vectors.ANALYZER['tokenizer']}"
    )
    print(
        f"{len(STOP_WORDS)} stop words; top_k={TOP_K}; {os.cpu_count()} CPUs; {args.calls} timed calls each"
    )
    workdir = Path(tempfile.mkdtemp(prefix="fathom-bench-"))
    try:
        figures = {
            str(n): bench_size(
                n, args.calls, workdir, args.seed, args.random_vectors, args.real, args.split
            )
            for n in args.sizes
        }
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if args.json:
        args.json.write_text(
            json.dumps(
                {"engine": f"Milvus Lite {engine}", "dense_index": dense_index, "figures": figures},
                indent=1,
            )
        )
    return 0


# -- side by side ------------------------------------------------------------------------


def compare(args: argparse.Namespace) -> int:
    """Each size in this interpreter and in each ``--also`` one, one after the other
    (never two at once: they would share the cores), then one table."""
    pythons = [sys.executable, *args.also]
    runs: dict[str, list[dict[str, object]]] = {}
    workdir = Path(tempfile.mkdtemp(prefix="fathom-bench-compare-"))
    passed = ["--calls", str(args.calls), "--seed", str(args.seed), "--real", str(args.real)]
    passed += ["--split", str(args.split)]
    passed += ["--random-vectors"] if args.random_vectors else []
    passed += ["--dense-index", args.dense_index] if args.dense_index else []
    try:
        for n in args.sizes:
            for i, python in enumerate(pythons):
                out = workdir / f"{n}-{i}.json"
                print(f"\n### {n:,} chunks with {python}", flush=True)
                command = [python, __file__, "--sizes", str(n), "--json", str(out), *passed]
                subprocess.run(command, check=True)
                runs.setdefault(str(n), []).append(json.loads(out.read_text()))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print_table(runs)
    if args.json:
        args.json.write_text(json.dumps(runs, indent=1))
    return 0


def print_table(runs: dict[str, list[dict[str, object]]]) -> None:
    """Markdown: per size, each engine's row and the numpy row of the same process."""
    print(
        "\n| chunks | search | dense top-10 agreement | BM25 top-10 agreement | hybrid, 1 query p50 / p95 ms "
        "| hybrid per sub-query (8 per call) p50 / p95 ms | dense per sub-query | BM25 per sub-query "
        "| open s (+ copy s) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")

    def cell(figures: dict[str, dict[str, float]], key: str, both: bool = True) -> str:
        row = figures[key]
        if not both:
            return f"{row['subquery_p50_ms']:.1f}"
        return f"{row['subquery_p50_ms']:.1f} / {row['subquery_p95_ms']:.1f}"

    for n, engines in runs.items():
        for run in engines:
            figures = run["figures"][n]  # type: ignore[index]
            agree = figures["agreement"]
            opened = figures["open"]
            copied = bool(opened.get("copied"))
            label = f"{run['engine']} ({run['dense_index']})"
            if copied:
                scan = figures["agreement_scan"]
                print(
                    f"| {int(n):,} | {label}, its own scan | {scan['dense_overlap_at_10']:.2f} "
                    f"| {scan['bm25_overlap_at_10']:.2f} | {cell(figures, 'milvus_scan/hybrid/1')} "
                    f"| {cell(figures, f'milvus_scan/hybrid/{BATCH}')} "
                    f"| {cell(figures, f'milvus_scan/dense/{BATCH}', False)} | | |"
                )
                label = f"{run['engine']} + in-memory copy (faiss fp16)"
            open_s = f"{opened['seconds']:.2f}" + (
                f" (+ {opened['copy_seconds']:.1f})" if copied else ""
            )
            print(
                f"| {int(n):,} | {label} | {agree['dense_overlap_at_10']:.2f} | {agree['bm25_overlap_at_10']:.2f} "
                f"| {cell(figures, 'milvus_lite/hybrid/1')} | {cell(figures, f'milvus_lite/hybrid/{BATCH}')} "
                f"| {cell(figures, f'milvus_lite/dense/{BATCH}', False)} "
                f"| {cell(figures, f'milvus_lite/bm25/{BATCH}', False)} | {open_s} |"
            )
            if "split_agreement" in figures:
                split = figures["split_agreement"]
                print(
                    f"| {int(n):,} | the same rows as two collections (90% + 10%) ranked as one: hybrid agreement "
                    f"{split['hybrid_overlap_at_10']:.2f} (each collection's own scores merged: "
                    f"{split['merged_hybrid_overlap_at_10']:.2f}) | {split['dense_overlap_at_10']:.2f} "
                    f"| {split['bm25_overlap_at_10']:.2f} | {cell(figures, 'split/hybrid/1')} "
                    f"| {cell(figures, f'split/hybrid/{BATCH}')} | {cell(figures, f'split/dense/{BATCH}', False)} "
                    f"| {cell(figures, f'split/bm25/{BATCH}', False)} | |"
                )
            print(
                f"| {int(n):,} | numpy brute force (same process) | 1 | 1 | {cell(figures, 'numpy/hybrid/1')} "
                f"| {cell(figures, f'numpy/hybrid/{BATCH}')} | {cell(figures, f'numpy/dense/{BATCH}', False)} "
                f"| {cell(figures, f'numpy/bm25/{BATCH}', False)} | |"
            )


if __name__ == "__main__":
    raise SystemExit(main())
