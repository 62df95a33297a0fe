"""A GGUF model is described from its header: name, size, quantization, context, chat or
embedding, thinking or not; damaged or foreign files give a sentence naming the file."""

from __future__ import annotations

import struct
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from app.model_files.gguf_info import GgufError, GgufInfo, read_gguf_info, size_label_for

# -- a tiny GGUF writer ------------------------------------------------------------

UINT8, INT8, UINT16, INT16, UINT32, INT32, FLOAT32, BOOL, STRING, ARRAY, UINT64, INT64, FLOAT64 = (
    range(13)
)
CODES = {UINT8: "B", INT8: "b", UINT16: "H", INT16: "h", UINT32: "I", INT32: "i", FLOAT32: "f", BOOL: "?",
         UINT64: "Q", INT64: "q", FLOAT64: "d"}  # fmt: skip
F32, Q4_0 = 0, 2
BYTES_PER_BLOCK = {F32: (1, 4), Q4_0: (32, 18)}

Kv = tuple[str, int, object]  # key, value type, value (for ARRAY: (element type, [values]))
Tensor = tuple[str, list[int], int]  # name, shape, ggml type


def gguf_string(text: str) -> bytes:
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def gguf_value(vtype: int, value: object) -> bytes:
    if vtype == STRING:
        assert isinstance(value, str)
        return gguf_string(value)
    if vtype == ARRAY:
        assert isinstance(value, tuple)
        etype, items = value
        return struct.pack("<IQ", etype, len(items)) + b"".join(
            gguf_value(etype, item) for item in items
        )
    return struct.pack("<" + CODES[vtype], value)


def gguf_header(
    kvs: list[Kv], tensors: Sequence[Tensor] = (), version: int = 3
) -> tuple[bytes, int]:
    """The header bytes and the size of the tensor data that must follow it."""
    out = [b"GGUF", struct.pack("<IQQ", version, len(tensors), len(kvs))]
    for key, vtype, value in kvs:
        out += [gguf_string(key), struct.pack("<I", vtype), gguf_value(vtype, value)]
    offset = 0
    for name, shape, ggml_type in tensors:
        out += [
            gguf_string(name),
            struct.pack(f"<I{len(shape)}QIQ", len(shape), *shape, ggml_type, offset),
        ]
        elements = 1
        for dim in shape:
            elements *= dim
        block, size = BYTES_PER_BLOCK[ggml_type]
        offset += (elements // block * size + 31) // 32 * 32
    return b"".join(out), offset


def write_gguf(
    path: Path, kvs: list[Kv], tensors: Sequence[Tensor] = (), *, version: int = 3
) -> Path:
    """A valid GGUF file; its tensor data is a sparse hole of the right length."""
    header, data_size = gguf_header(kvs, tensors, version)
    data_start = (len(header) + 31) // 32 * 32
    with path.open("wb") as file:
        file.write(header)
        file.truncate(data_start + data_size)
    return path


THINKING_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n<think>\n{% endif %}"
)
PLAIN_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>{% endfor %}"
)


def qwen3_kvs(**overrides: object) -> list[Kv]:
    """Metadata of a 28-layer qwen3 chat model that thinks (Qwen3-1.7B-like)."""
    kvs: dict[str, tuple[int, object]] = {
        "general.architecture": (STRING, "qwen3"),
        "general.name": (STRING, "Qwen3 1.7B"),
        "general.license": (STRING, "apache-2.0"),
        "general.file_type": (UINT32, 15),
        "qwen3.context_length": (UINT32, 40960),
        "qwen3.block_count": (UINT32, 28),
        "qwen3.embedding_length": (UINT32, 2048),
        "qwen3.attention.head_count": (UINT32, 16),
        "qwen3.attention.head_count_kv": (UINT32, 8),
        "qwen3.attention.key_length": (UINT32, 128),
        "tokenizer.chat_template": (STRING, THINKING_TEMPLATE),
    }
    for key, override in overrides.items():
        key = key.replace("__", ".")
        if override is None:
            del kvs[key]
        else:
            assert isinstance(override, tuple)
            kvs[key] = override
    return [(key, vtype, value) for key, (vtype, value) in kvs.items()]


# 2048 x 839_680 Q4_0 weights plus 2048 F32 norms: 1_719_668_736 parameters, "1.7B"
QWEN3_TENSORS: list[Tensor] = [
    ("token_embd.weight", [2048, 839_680], Q4_0),
    ("output_norm.weight", [2048], F32),
]


# -- the real starter model ------------------------------------------------------------


def test_the_starter_model_is_described_from_its_header(starter_model_path: Path) -> None:
    """The settings page shows SmolLM2's real name, size, quantization and context."""
    info = read_gguf_info(starter_model_path)
    assert info.path == starter_model_path
    assert info.file_size == starter_model_path.stat().st_size
    assert info.name == "Smollm2 135M 8k Lc100K Mix1 Ep2"  # general.name, not the file name
    assert info.architecture == "llama"
    assert info.quantization == "Q4_1"
    assert info.context_length == 8192
    assert 134_000_000 < info.parameters < 136_000_000
    assert info.parameters == 134_515_008
    assert info.size_label == "135M"
    assert info.license == "apache-2.0"
    assert info.chat is True
    assert info.reasoning is False
    assert (info.n_layers, info.n_heads, info.n_kv_heads) == (30, 9, 3)
    assert (info.embedding_length, info.key_length) == (576, 64)
    assert info.kv_cache_bytes(8192) == 2 * 30 * 8192 * 3 * 64 * 2 == 188_743_680


def test_reading_the_starter_header_takes_well_under_a_second(starter_model_path: Path) -> None:
    """Listing models does not stall: the 49k-token vocabulary is skipped, not kept."""
    read_gguf_info(starter_model_path)  # warm the file cache
    started = time.perf_counter()
    read_gguf_info(starter_model_path)
    assert time.perf_counter() - started < 0.5


# -- synthetic models ----------------------------------------------------------------------


def test_a_thinking_qwen3_model_is_a_reasoning_chat_model(tmp_path: Path) -> None:
    """A model whose chat template opens <think> is offered as a reasoning model."""
    info = read_gguf_info(write_gguf(tmp_path / "qwen3.gguf", qwen3_kvs(), QWEN3_TENSORS))
    assert info.name == "Qwen3 1.7B"
    assert info.architecture == "qwen3"
    assert info.reasoning is True
    assert info.chat is True
    assert info.quantization == "Q4_K_M"
    assert info.context_length == 40960
    assert info.license == "apache-2.0"
    assert info.parameters == 2048 * 839_680 + 2048
    assert info.size_label == "1.7B"  # derived: the header has no general.size_label


def test_a_chat_template_without_think_is_not_reasoning(tmp_path: Path) -> None:
    kvs = qwen3_kvs(tokenizer__chat_template=(STRING, PLAIN_TEMPLATE))
    info = read_gguf_info(write_gguf(tmp_path / "plain.gguf", kvs, QWEN3_TENSORS))
    assert (info.chat, info.reasoning) == (True, False)


def test_the_kv_cache_estimate_uses_the_kv_heads_and_key_length(tmp_path: Path) -> None:
    """The memory estimate for a context size counts f16 K and V for every layer."""
    info = read_gguf_info(write_gguf(tmp_path / "qwen3.gguf", qwen3_kvs(), QWEN3_TENSORS))
    assert (info.n_layers, info.n_heads, info.n_kv_heads, info.key_length) == (28, 16, 8, 128)
    assert info.kv_cache_bytes(4096) == 2 * 28 * 4096 * 8 * 128 * 2 == 469_762_048
    assert info.kv_cache_bytes(0) == 0


def test_per_layer_head_counts_take_the_largest(tmp_path: Path) -> None:
    """Some models store head counts per layer; the estimate assumes the largest."""
    kvs = qwen3_kvs(
        qwen3__attention__head_count=(ARRAY, (UINT32, [8, 16, 32])),
        qwen3__attention__head_count_kv=(ARRAY, (INT32, [2, 4, 0])),
        qwen3__attention__key_length=None,
    )
    info = read_gguf_info(write_gguf(tmp_path / "varying.gguf", kvs))
    assert (info.n_heads, info.n_kv_heads) == (32, 4)
    assert info.key_length == 2048 // 32  # embedding_length // n_heads when not stated


def test_missing_kv_heads_default_to_the_heads_and_unknown_shapes_estimate_zero(
    tmp_path: Path,
) -> None:
    kvs = qwen3_kvs(qwen3__attention__head_count_kv=None)
    assert read_gguf_info(write_gguf(tmp_path / "mha.gguf", kvs)).n_kv_heads == 16
    bare = read_gguf_info(
        write_gguf(tmp_path / "bare.gguf", [("general.architecture", STRING, "llama")])
    )
    assert bare.kv_cache_bytes(4096) == 0


def test_a_stated_size_label_wins_over_the_tensor_count(tmp_path: Path) -> None:
    kvs = qwen3_kvs(general__size_label=(STRING, "2B"))
    assert (
        read_gguf_info(write_gguf(tmp_path / "labelled.gguf", kvs, QWEN3_TENSORS)).size_label
        == "2B"
    )


@pytest.mark.parametrize(
    ("parameters", "label"),
    [(134_515_008, "135M"), (1_719_668_736, "1.7B"), (8_190_735_360, "8.2B"), (1_000_000_000, "1B"),
     (70_553_706_496, "71B"), (22_700_000, "23M"), (5_000, "5K"), (999, "999"), (0, "")],
)  # fmt: skip
def test_size_labels_read_like_model_names(parameters: int, label: str) -> None:
    assert size_label_for(parameters) == label


@pytest.mark.parametrize("architecture", ["bert", "nomic-bert", "jina-bert-v2", "t5encoder"])
def test_an_embedding_only_model_is_not_offered_for_chat(tmp_path: Path, architecture: str) -> None:
    """An embedding model is never picked as the chat model, even with a chat template."""
    kvs: list[Kv] = [
        ("general.architecture", STRING, architecture),
        ("general.name", STRING, "nomic embed text"),
        ("tokenizer.chat_template", STRING, PLAIN_TEMPLATE),
        (f"{architecture}.block_count", UINT32, 12),
    ]
    info = read_gguf_info(
        write_gguf(tmp_path / "embed.gguf", kvs, [("token_embd.weight", [768, 64], F32)])
    )
    assert info.architecture == architecture
    assert info.chat is False


def test_a_qwen3_embedding_model_is_not_offered_for_chat(tmp_path: Path) -> None:
    """Qwen3-Embedding shares the chat architecture but pools its output."""
    kvs = qwen3_kvs(qwen3__pooling_type=(UINT32, 3))
    assert read_gguf_info(write_gguf(tmp_path / "qwen3-embedding.gguf", kvs)).chat is False


def test_projectors_adapters_and_template_less_models_are_not_chat_models(tmp_path: Path) -> None:
    projector: list[Kv] = [("general.architecture", STRING, "clip"), ("general.type", STRING, "mmproj"),
                 ("tokenizer.chat_template", STRING, PLAIN_TEMPLATE)]  # fmt: skip
    adapter = qwen3_kvs(general__type=(STRING, "adapter"))
    no_template = qwen3_kvs(tokenizer__chat_template=None)
    for name, kvs in [("projector", projector), ("adapter", adapter), ("base", no_template)]:
        assert read_gguf_info(write_gguf(tmp_path / f"{name}.gguf", kvs)).chat is False, name


def test_without_metadata_the_file_name_and_tensor_types_are_used(tmp_path: Path) -> None:
    """An old or minimal file still shows a name and a quantization."""
    tensors: list[Tensor] = [
        ("a", [4096, 64], Q4_0),
        ("b", [64], F32),
        ("c", [64], F32),
        ("d", [64], F32),
    ]
    info = read_gguf_info(write_gguf(tmp_path / "my-model.Q4_0.gguf", [], tensors))
    assert info.name == "my-model.Q4_0"
    assert info.architecture == ""
    assert info.quantization == "Q4_0"  # most parameters are Q4_0, though most tensors are F32
    assert (info.context_length, info.license, info.chat, info.reasoning) == (0, "", False, False)
    empty = read_gguf_info(write_gguf(tmp_path / "empty.gguf", []))
    assert (empty.quantization, empty.parameters, empty.size_label) == ("", 0, "")


def test_a_large_vocabulary_is_skipped_and_the_keys_after_it_still_read(tmp_path: Path) -> None:
    """A 150k-token vocabulary (several MB, many read chunks) does not slow or confuse the reader."""
    tokens = [f"tok{i}" for i in range(150_000)]
    merges = [f"t{i} o{i}" for i in range(150_000)]
    kvs = [
        ("general.architecture", STRING, "qwen3"),
        ("tokenizer.ggml.tokens", ARRAY, (STRING, tokens)),
        ("tokenizer.ggml.token_type", ARRAY, (INT32, [1] * 150_000)),
        ("tokenizer.ggml.merges", ARRAY, (STRING, merges)),
        ("general.name", STRING, "After The Vocabulary"),
        ("qwen3.context_length", UINT64, 32768),
        ("tokenizer.chat_template", STRING, THINKING_TEMPLATE),
    ]
    path = write_gguf(tmp_path / "big-vocab.gguf", kvs, QWEN3_TENSORS)
    started = time.perf_counter()
    info = read_gguf_info(path)
    assert time.perf_counter() - started < 1.0
    assert (info.name, info.context_length, info.reasoning) == ("After The Vocabulary", 32768, True)


def test_version_2_files_are_read(tmp_path: Path) -> None:
    info = read_gguf_info(write_gguf(tmp_path / "v2.gguf", qwen3_kvs(), QWEN3_TENSORS, version=2))
    assert (info.architecture, info.size_label) == ("qwen3", "1.7B")


def test_the_result_is_a_frozen_value(tmp_path: Path) -> None:
    info = read_gguf_info(write_gguf(tmp_path / "qwen3.gguf", qwen3_kvs()))
    assert isinstance(info, GgufInfo)
    with pytest.raises(AttributeError):
        info.name = "other"  # type: ignore[misc]


# -- bad files ---------------------------------------------------------------------------


def assert_refused(path: Path, *words: str) -> None:
    with pytest.raises(GgufError) as caught:
        read_gguf_info(path)
    message = str(caught.value)
    assert path.name in message
    for word in words:
        assert word in message, message


def test_a_file_that_is_not_gguf_is_refused_by_name(tmp_path: Path) -> None:
    """Picking a text file or a safetensors file says plainly that it is no GGUF model."""
    text = tmp_path / "notes.gguf"
    text.write_text("hello, this is not a model\n")
    assert_refused(text, "is not a GGUF model file (it does not start with GGUF).")
    empty = tmp_path / "empty.gguf"
    empty.write_bytes(b"")
    assert_refused(empty, "is not a GGUF model file")


def test_a_file_cut_short_inside_the_metadata_is_refused(tmp_path: Path) -> None:
    """An unfinished download says it is cut short rather than crashing the reader."""
    header, _ = gguf_header(qwen3_kvs(), QWEN3_TENSORS)
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(header[: len(header) // 2])
    assert_refused(cut, "cut short", "Download the model again")


def test_a_file_missing_its_tensor_data_is_refused(tmp_path: Path) -> None:
    """A download that stopped after the header is not listed as a usable model."""
    header, _ = gguf_header(qwen3_kvs(), QWEN3_TENSORS)
    partial = tmp_path / "partial.gguf"
    partial.write_bytes(header + b"\0" * 4096)
    assert_refused(partial, "is incomplete")


def test_a_string_longer_than_the_file_is_refused(tmp_path: Path) -> None:
    """A damaged length field does not make the reader allocate gigabytes."""
    data = (
        b"GGUF"
        + struct.pack("<IQQ", 3, 0, 1)
        + gguf_string("general.name")
        + struct.pack("<IQ", STRING, 2**40)
    )
    damaged = tmp_path / "damaged.gguf"
    damaged.write_bytes(data + b"x" * 100)
    assert_refused(damaged, "is damaged", "more than the rest of the file holds")


def test_absurd_counts_are_refused(tmp_path: Path) -> None:
    too_many_keys = tmp_path / "keys.gguf"
    too_many_keys.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, 2**62) + b"\0" * 64)
    assert_refused(too_many_keys, "is damaged")
    huge_array = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + gguf_string("tokenizer.ggml.tokens")
    huge_array += struct.pack("<IIQ", ARRAY, STRING, 2**50)
    array_file = tmp_path / "array.gguf"
    array_file.write_bytes(huge_array + b"\0" * 64)
    assert_refused(array_file, "is damaged")
    unknown = (
        b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + gguf_string("general.name") + struct.pack("<I", 99)
    )
    unknown_file = tmp_path / "unknown.gguf"
    unknown_file.write_bytes(unknown + b"\0" * 64)
    assert_refused(unknown_file, "unknown type 99")


def test_unsupported_versions_are_refused(tmp_path: Path) -> None:
    old = tmp_path / "old.gguf"
    old.write_bytes(b"GGUF" + struct.pack("<IQQ", 1, 0, 0))
    assert_refused(old, "version 1")
    big_endian = tmp_path / "s390x.gguf"
    big_endian.write_bytes(b"GGUF" + struct.pack(">IQQ", 3, 0, 0))
    assert_refused(big_endian, "big-endian")


def test_a_missing_file_or_a_folder_is_a_gguf_error(tmp_path: Path) -> None:
    assert_refused(tmp_path / "gone.gguf", "Could not read")
    folder = tmp_path / "folder.gguf"
    folder.mkdir()
    assert_refused(folder, "Could not read")
