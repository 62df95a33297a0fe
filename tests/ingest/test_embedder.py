"""The built-in embedder: the real int8 all-MiniLM-L6-v2 on onnxruntime, offline."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from app.core.errors import ModelUnavailable
from app.core.settings import EmbeddingSettings, Settings
from app.ingest.embedder import Embedder, OnnxMiniLMEmbedder, make_embedder

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def embedder() -> OnnxMiniLMEmbedder:
    return OnnxMiniLMEmbedder(batch_size=8)


def test_similar_sentences_score_higher_than_unrelated_ones(embedder: OnnxMiniLMEmbedder) -> None:
    vectors = embedder.embed(
        [
            "How do I create a partition in a collection?",
            "Creating partitions inside a Milvus collection",
            "A recipe for lemon cake with poppy seeds.",
            "The cat is sleeping on the sofa.",
            "A kitten naps on the couch.",
        ]
    )
    sims = vectors @ vectors.T
    assert sims[0, 1] > 0.5 > sims[0, 2]
    assert sims[3, 4] > sims[3, 0] + 0.3
    assert sims[3, 4] > sims[3, 2] + 0.3


def test_vectors_are_float32_unit_rows_of_the_model_dimension(embedder: OnnxMiniLMEmbedder) -> None:
    vectors = embedder.embed(["one", "a somewhat longer sentence about vector search", ""])
    assert vectors.dtype == np.float32
    assert vectors.shape == (3, embedder.dimension) == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.embed([]).shape == (0, 384)


def test_a_batch_gives_the_same_vectors_as_one_text_at_a_time(embedder: OnnxMiniLMEmbedder) -> None:
    texts = [
        "short",
        "Milvus supports partitions, partition keys and several index types. " * 6,
        "How do I create a partition?",
        "word " * 400,  # longer than the model's 256 tokens: truncated, not an error
        "Une phrase en français, avec des accents.",
    ] * 3
    batched = embedder.embed(texts)
    single = np.stack([embedder.embed([t])[0] for t in texts[:5]] * 3)
    assert np.allclose(batched, single, atol=2e-3)
    assert float(np.min(np.sum(batched * single, axis=1))) > 0.9999


def test_tokens_are_counted_with_the_special_tokens_and_not_truncated(
    embedder: OnnxMiniLMEmbedder,
) -> None:
    assert embedder.max_tokens == 256
    assert embedder.count_tokens("hello world") == 4  # [CLS] hello world [SEP]
    assert embedder.count_tokens("word " * 400) == 402
    assert embedder.tokenizer.encode("hello world", add_special_tokens=False).tokens == [
        "hello",
        "world",
    ]


def test_the_embedder_is_the_settings_default_and_follows_the_protocol() -> None:
    made = make_embedder(Settings())
    assert isinstance(made, OnnxMiniLMEmbedder) and isinstance(made, Embedder)
    assert made.model_name == "all-MiniLM-L6-v2-onnx-int8"
    remote = make_embedder(
        Settings(embedding=EmbeddingSettings(backend="ollama", model="nomic-embed-text"))
    )
    assert remote.model_name == "ollama:nomic-embed-text"  # it connects only when it embeds
    with pytest.raises(
        ModelUnavailable, match="OpenAI-compatible embedding back end is chosen but no address"
    ):
        make_embedder(
            Settings(embedding=EmbeddingSettings(backend="openai", model="text-embedding-3-small"))
        )
    with pytest.raises(ModelUnavailable, match="Unknown embedding back end 'bert'"):
        make_embedder(Settings(embedding=EmbeddingSettings(backend="bert")))


def test_embedding_writes_nothing_into_the_home_folder(tmp_path: Path) -> None:
    """onnxruntime 1.32 writes ~/.cache/Microsoft/DeveloperTools/.onnxruntime/deviceid
    (telemetry) unless ORT_DISABLE_TELEMETRY=1 is set before it loads."""
    home = tmp_path / "home"
    home.mkdir()
    env = {
        k: v for k, v in os.environ.items() if k not in ("ORT_DISABLE_TELEMETRY", "XDG_CACHE_HOME")
    }
    env.update(HOME=str(home), PYTHONPATH=str(REPO_ROOT))
    code = "from app.ingest.embedder import OnnxMiniLMEmbedder; print(OnnxMiniLMEmbedder().embed(['hi']).shape)"
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "(1, 384)"
    assert [p.relative_to(home) for p in home.rglob("*")] == []


class _CountingBackend:
    """A stand-in back end for the control flow of ModelEmbedder only (batching,
    normalisation, threads); the real endpoints are tested with the model layer."""

    def __init__(self) -> None:
        self.batches: list[int] = []
        self.loops: set[int] = set()

    async def embed(self, texts):  # type: ignore[no-untyped-def]
        import asyncio

        from app.core.models import Usage
        from app.llm.base import EmbedResult

        self.batches.append(len(texts))
        self.loops.add(id(asyncio.get_running_loop()))
        return EmbedResult(vectors=[[float(len(t)), 3.0, 4.0] for t in texts], usage=Usage())

    async def aclose(self) -> None:
        return None


async def test_a_model_embedder_batches_normalises_and_runs_off_the_calling_loop() -> None:
    import asyncio

    from app.ingest.embedder import ModelEmbedder

    backend = _CountingBackend()
    embedder = ModelEmbedder(backend, name="ollama:test", batch_size=2)  # type: ignore[arg-type]
    vectors = await asyncio.to_thread(embedder.embed, ["", "a", "abc", "abcd", "x"])
    assert backend.batches == [2, 2, 1]
    assert vectors.shape == (5, 3) and embedder.dimension == 3
    assert np.allclose(vectors[0], [0.0, 0.6, 0.8])
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    assert id(asyncio.get_running_loop()) not in backend.loops and len(backend.loops) == 1
    embedder.close()


def test_two_worker_threads_share_one_embedder(embedder: OnnxMiniLMEmbedder) -> None:
    from concurrent.futures import ThreadPoolExecutor

    texts = [f"Sentence number {i} about partitions, indexes and collections." for i in range(24)]
    alone = embedder.embed(texts)
    with ThreadPoolExecutor(max_workers=2) as pool:
        halves = list(pool.map(embedder.embed, [texts[:12], texts[12:]]))
    assert np.allclose(np.concatenate(halves), alone, atol=2e-3)
