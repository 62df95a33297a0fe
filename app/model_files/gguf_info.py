"""What a GGUF model file is, read from its header rather than guessed from its name.

GGUF is llama.cpp's model format. A file starts with the magic ``GGUF``, a version
(2 or 3), the number of tensors and of metadata pairs; then the metadata key/value
pairs; then one description per tensor (name, shape, type, offset); then, aligned,
the tensor data. Everything is little-endian.

:func:`read_gguf_info` reads the header only. The tokenizer's vocabulary (arrays of
50k-150k strings) is skipped without being kept, so even large models are read in a
fraction of a second. Damaged, cut-short or foreign files raise :class:`GgufError`
with a sentence that names the file.
"""

from __future__ import annotations

import struct
from collections import Counter
from dataclasses import dataclass
from math import prod
from pathlib import Path
from typing import BinaryIO

from app.core.errors import FathomError

__all__ = ["GgufError", "GgufInfo", "read_gguf_info", "size_label_for"]


class GgufError(FathomError):
    """A file is not a readable GGUF model (wrong format, damaged or incomplete)."""


# -- format tables -------------------------------------------------------------

_MAGIC = b"GGUF"
_SUPPORTED_VERSIONS = (2, 3)

_UINT8, _INT8, _UINT16, _INT16, _UINT32, _INT32, _FLOAT32, _BOOL = range(8)
_STRING, _ARRAY, _UINT64, _INT64, _FLOAT64 = range(8, 13)

# value type -> struct code of one element
_SCALAR_CODES: dict[int, str] = {
    _UINT8: "B",
    _INT8: "b",
    _UINT16: "H",
    _INT16: "h",
    _UINT32: "I",
    _INT32: "i",
    _FLOAT32: "f",
    _BOOL: "?",
    _UINT64: "Q",
    _INT64: "q",
    _FLOAT64: "d",
}
_SCALARS: dict[int, struct.Struct] = {
    vtype: struct.Struct("<" + code) for vtype, code in _SCALAR_CODES.items()
}
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")

# llama.cpp's llama_ftype (general.file_type); bit 1024 marks a guessed type.
_FILE_TYPES: dict[int, str] = {
    0: "F32",
    1: "F16",
    2: "Q4_0",
    3: "Q4_1",
    4: "Q4_1_SOME_F16",
    7: "Q8_0",
    8: "Q5_0",
    9: "Q5_1",
    10: "Q2_K",
    11: "Q3_K_S",
    12: "Q3_K_M",
    13: "Q3_K_L",
    14: "Q4_K_S",
    15: "Q4_K_M",
    16: "Q5_K_S",
    17: "Q5_K_M",
    18: "Q6_K",
    19: "IQ2_XXS",
    20: "IQ2_XS",
    21: "Q2_K_S",
    22: "IQ3_XS",
    23: "IQ3_XXS",
    24: "IQ1_S",
    25: "IQ4_NL",
    26: "IQ3_S",
    27: "IQ3_M",
    28: "IQ2_S",
    29: "IQ2_M",
    30: "IQ4_XS",
    31: "IQ1_M",
    32: "BF16",
    36: "TQ1_0",
    37: "TQ2_0",
    38: "MXFP4_MOE",
    39: "NVFP4",
    40: "Q1_0",
    41: "Q2_0",
}
_FILE_TYPE_GUESSED = 1024

# ggml_type -> (name, elements per block, bytes per block), as ggml's type traits say.
_TENSOR_TYPES: dict[int, tuple[str, int, int]] = {
    0: ("F32", 1, 4),
    1: ("F16", 1, 2),
    2: ("Q4_0", 32, 18),
    3: ("Q4_1", 32, 20),
    6: ("Q5_0", 32, 22),
    7: ("Q5_1", 32, 24),
    8: ("Q8_0", 32, 34),
    9: ("Q8_1", 32, 36),
    10: ("Q2_K", 256, 84),
    11: ("Q3_K", 256, 110),
    12: ("Q4_K", 256, 144),
    13: ("Q5_K", 256, 176),
    14: ("Q6_K", 256, 210),
    15: ("Q8_K", 256, 292),
    16: ("IQ2_XXS", 256, 66),
    17: ("IQ2_XS", 256, 74),
    18: ("IQ3_XXS", 256, 98),
    19: ("IQ1_S", 256, 50),
    20: ("IQ4_NL", 32, 18),
    21: ("IQ3_S", 256, 110),
    22: ("IQ2_S", 256, 82),
    23: ("IQ4_XS", 256, 136),
    24: ("I8", 1, 1),
    25: ("I16", 1, 2),
    26: ("I32", 1, 4),
    27: ("I64", 1, 8),
    28: ("F64", 1, 8),
    29: ("IQ1_M", 256, 56),
    30: ("BF16", 1, 2),
    34: ("TQ1_0", 256, 54),
    35: ("TQ2_0", 256, 66),
    39: ("MXFP4", 32, 17),
    40: ("NVFP4", 64, 36),
    41: ("Q1_0", 128, 18),
    42: ("Q2_0", 64, 18),
}

# Architectures that only embed (or only encode images/audio): no chat.
_NON_CHAT_ARCHITECTURES = frozenset(
    {
        "bert",
        "modern-bert",
        "nomic-bert",
        "nomic-bert-moe",
        "neo-bert",
        "jina-bert-v2",
        "jina-bert-v3",
        "eurobert",
        "t5encoder",
        "gemma-embedding",
        "clip",
        "wavtokenizer-dec",
    }
)
_NON_CHAT_FILE_TYPES = ("adapter", "mmproj", "projector", "lora", "clip")

_CHUNK = 1 << 20  # bytes read at a time
_MAX_KEPT_STRING = 1 << 20  # longer metadata strings are skipped (chat templates are a few KB)
_MAX_KEPT_ARRAY = 4096  # longer numeric arrays are skipped (per-layer arrays are kept)
_MAX_ARRAY_DEPTH = 8
_MAX_DIMS = 8  # ggml uses 4; more is a damaged file
_MIN_KV_BYTES = 8 + 4 + 1  # key length, value type, smallest value
_MIN_TENSOR_INFO_BYTES = 8 + 4 + 4 + 8  # name length, n_dims, type, offset
_DEFAULT_ALIGNMENT = 32

_SIZE_UNITS = ((10**12, "T"), (10**9, "B"), (10**6, "M"), (10**3, "K"))

_Value = int | float | bool | str | list[int | float | bool] | None


# -- public API ------------------------------------------------------------------


@dataclass(frozen=True)
class GgufInfo:
    """A GGUF model's identity and size, as its header states them."""

    path: Path
    file_size: int
    name: str  # general.name, else the file's stem
    architecture: str  # general.architecture ("llama", "qwen3", "bert", ...)
    parameters: int  # summed from the tensor shapes (0 if none)
    size_label: str  # general.size_label, else derived from parameters ("135M", "1.7B")
    quantization: str  # from general.file_type, else the dominant tensor type, else ""
    context_length: int  # the context the model was trained for, 0 when absent
    license: str  # general.license, "" when absent
    reasoning: bool  # the chat template mentions <think>
    chat: bool  # has a chat template and is not an embedding model, projector or adapter
    n_layers: int
    n_heads: int
    n_kv_heads: int
    embedding_length: int
    key_length: int

    def kv_cache_bytes(self, n_ctx: int) -> int:
        """Bytes of an f16 K and V cache for ``n_ctx`` tokens (0 when the shape is unknown)."""
        if n_ctx <= 0:
            return 0
        return 2 * self.n_layers * n_ctx * self.n_kv_heads * self.key_length * 2


def read_gguf_info(path: Path) -> GgufInfo:
    """Read a GGUF file's header; raises :class:`GgufError` for files that are not
    readable GGUF models (foreign format, damaged, cut short, unreadable)."""
    path = Path(path)
    try:
        with path.open("rb") as file:
            size = _file_size(file)
            return _read(file, path, size)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise GgufError(f"Could not read the model file {path}: {reason}.") from exc


# -- reading -----------------------------------------------------------------------


def _file_size(file: BinaryIO) -> int:
    file.seek(0, 2)
    size = file.tell()
    file.seek(0)
    return size


class _Reader:
    """Sequential little-endian reads over a file, a chunk at a time.

    Invariant: the file position is ``_base + len(_buf)``; ``_pos`` indexes ``_buf``.
    """

    def __init__(self, file: BinaryIO, path: Path, size: int) -> None:
        self._file = file
        self._path = path
        self._size = size
        self._buf = b""
        self._pos = 0
        self._base = 0

    def tell(self) -> int:
        return self._base + self._pos

    def remaining(self) -> int:
        return self._size - self.tell()

    def _fill(self, n: int) -> None:
        """Make ``n`` bytes available at ``_pos``."""
        if self._pos + n <= len(self._buf):
            return
        if n > self.remaining():
            raise self.cut_short()
        tail = self._buf[self._pos :]
        self._base += self._pos
        self._buf = tail + self._file.read(max(n - len(tail), _CHUNK))
        self._pos = 0
        if len(self._buf) < n:  # the file shrank while being read
            raise self.cut_short()

    def skip(self, n: int) -> None:
        if n > self.remaining():
            raise self.cut_short()
        if self._pos + n <= len(self._buf):
            self._pos += n
            return
        target = self.tell() + n
        self._file.seek(target)
        self._base, self._buf, self._pos = target, b"", 0

    def unpack(self, fmt: struct.Struct) -> tuple[object, ...]:
        self._fill(fmt.size)
        values = fmt.unpack_from(self._buf, self._pos)
        self._pos += fmt.size
        return values

    def u32(self) -> int:
        self._fill(4)
        (value,) = _U32.unpack_from(self._buf, self._pos)
        self._pos += 4
        return int(value)

    def u64(self) -> int:
        self._fill(8)
        (value,) = _U64.unpack_from(self._buf, self._pos)
        self._pos += 8
        return int(value)

    def raw(self, n: int) -> bytes:
        self._fill(n)
        data = self._buf[self._pos : self._pos + n]
        self._pos += n
        return data

    def string(self, what: str) -> str | None:
        """A GGUF string; None when it is too long to be worth keeping (it is skipped)."""
        n = self.u64()
        self.check_fits(n, 1, what, "bytes")
        if n > _MAX_KEPT_STRING:
            self.skip(n)
            return None
        return self.raw(n).decode("utf-8", errors="replace")

    def skip_string(self, what: str) -> None:
        n = self.u64()
        self.check_fits(n, 1, what, "bytes")
        self.skip(n)

    def skip_strings(self, count: int) -> None:
        """Skip ``count`` GGUF strings (a vocabulary), staying inside the buffer when possible."""
        buf, pos, end = self._buf, self._pos, len(self._buf)
        unpack_from = _U64.unpack_from
        done = 0
        while done < count:
            if pos + 8 <= end:
                after = pos + 8 + unpack_from(buf, pos)[0]
                if after <= end:
                    pos = after
                    done += 1
                    continue
            self._pos = pos
            self.skip_string("text in a list")
            done += 1
            buf, pos, end = self._buf, self._pos, len(self._buf)
        self._pos = pos

    def check_fits(self, count: int, item_bytes: int, what: str, unit: str = "entries") -> None:
        """Reject a length the rest of the file cannot hold (a damaged header)."""
        if count * item_bytes > self.remaining():
            raise GgufError(
                f"{self._path} is damaged or cut short: its header declares a {what} of {count:,} {unit}, "
                "more than the rest of the file holds.",
                hint="Download the model again.",
            )

    def cut_short(self) -> GgufError:
        return GgufError(
            f"{self._path} is cut short: the file ends inside its header (an unfinished download or a damaged copy).",
            hint="Download the model again.",
        )

    def damaged(self, detail: str) -> GgufError:
        return GgufError(f"{self._path} is damaged: {detail}.", hint="Download the model again.")


def _read(file: BinaryIO, path: Path, size: int) -> GgufInfo:
    reader = _Reader(file, path, size)
    if size < 4 or reader.raw(4) != _MAGIC:
        raise GgufError(f"{path} is not a GGUF model file (it does not start with GGUF).")
    version = reader.u32()
    if version not in _SUPPORTED_VERSIONS:
        if (
            version > 0xFFFF
            and struct.unpack("<I", struct.pack(">I", version))[0] in _SUPPORTED_VERSIONS
        ):
            raise GgufError(f"{path} is a big-endian GGUF file, which Fathom cannot read.")
        raise GgufError(f"{path} uses GGUF version {version}; Fathom reads versions 2 and 3.")
    tensor_count = reader.u64()
    kv_count = reader.u64()
    reader.check_fits(kv_count, _MIN_KV_BYTES, "metadata list")
    reader.check_fits(tensor_count, _MIN_TENSOR_INFO_BYTES, "tensor list")

    metadata: dict[str, _Value] = {}
    for _ in range(kv_count):
        key = reader.string("metadata key") or ""
        vtype = reader.u32()
        metadata[key] = _read_value(reader, vtype)

    parameters = 0
    elements_by_type: Counter[int] = Counter()
    data_end = 0  # end of the furthest tensor, relative to the data section
    sizes_known = True
    for _ in range(tensor_count):
        reader.skip_string("tensor name")
        n_dims = reader.u32()
        if n_dims > _MAX_DIMS:
            raise reader.damaged(f"a tensor claims {n_dims} dimensions")
        elements = prod(reader.u64() for _ in range(n_dims))
        ggml_type = reader.u32()
        offset = reader.u64()
        parameters += elements
        elements_by_type[ggml_type] += elements
        traits = _TENSOR_TYPES.get(ggml_type)
        if traits is None:
            sizes_known = False
        else:
            data_end = max(data_end, offset + elements // traits[1] * traits[2])

    if tensor_count and sizes_known:
        alignment = _int(metadata.get("general.alignment")) or _DEFAULT_ALIGNMENT
        if alignment <= 0:
            raise reader.damaged(f"its header states a data alignment of {alignment}")
        header_end = reader.tell()
        data_start = (header_end + alignment - 1) // alignment * alignment
        needed = data_start + data_end
        if size < needed:
            raise GgufError(
                f"{path} is incomplete: it holds {size:,} bytes but its tensors need {needed:,} "
                "(an unfinished download or a damaged copy).",
                hint="Download the model again.",
            )
    return _info(path, size, metadata, parameters, elements_by_type)


def _read_value(reader: _Reader, vtype: int, depth: int = 0) -> _Value:
    scalar = _SCALARS.get(vtype)
    if scalar is not None:
        return reader.unpack(scalar)[0]  # type: ignore[return-value]
    if vtype == _STRING:
        return reader.string("text value")
    if vtype == _ARRAY:
        return _read_array(reader, depth)
    raise reader.damaged(f"its header has a value of unknown type {vtype}")


def _read_array(reader: _Reader, depth: int) -> _Value:
    """A small numeric array (per-layer values) is kept; anything else is skipped."""
    if depth >= _MAX_ARRAY_DEPTH:
        raise reader.damaged("its header nests arrays too deeply")
    etype = reader.u32()
    count = reader.u64()
    code = _SCALAR_CODES.get(etype)
    if code is not None:
        item = _SCALARS[etype].size
        reader.check_fits(count, item, "list of numbers")
        if count > _MAX_KEPT_ARRAY:
            reader.skip(count * item)
            return None
        return list(reader.unpack(struct.Struct(f"<{count}{code}")))  # type: ignore[arg-type]
    if etype == _STRING:
        reader.check_fits(count, 8, "list of texts")
        reader.skip_strings(count)
        return None
    if etype == _ARRAY:
        reader.check_fits(count, 12, "list of lists")
        for _ in range(count):
            _read_array(reader, depth + 1)
        return None
    raise reader.damaged(f"its header has a list of unknown type {etype}")


# -- interpreting --------------------------------------------------------------------


def _int(value: _Value) -> int | None:
    """An integer setting; a per-layer list gives its largest value."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, list):
        numbers = [v for v in value if isinstance(v, int) and not isinstance(v, bool)]
        return max(numbers) if numbers else None
    return None


def _str(value: _Value) -> str:
    return value.strip() if isinstance(value, str) else ""


def size_label_for(parameters: int) -> str:
    """A short parameter count as model names write it: "135M", "1.7B", "8.2B", "70B"."""
    if parameters <= 0:
        return ""
    units = [(unit, suffix) for unit, suffix in _SIZE_UNITS if parameters >= unit]
    if not units:
        return str(parameters)
    unit, suffix = units[0]
    scaled = parameters / unit
    if scaled < 9.95:
        return f"{scaled:.1f}".removesuffix(".0") + suffix
    return f"{round(scaled)}{suffix}"


def _quantization(metadata: dict[str, _Value], elements_by_type: Counter[int]) -> str:
    file_type = _int(metadata.get("general.file_type"))
    if file_type is not None:
        name = _FILE_TYPES.get(file_type & ~_FILE_TYPE_GUESSED)
        if name:
            return name
    if elements_by_type:
        ggml_type, _ = elements_by_type.most_common(1)[0]
        traits = _TENSOR_TYPES.get(ggml_type)
        return traits[0] if traits else f"type {ggml_type}"
    return ""


def _is_chat(metadata: dict[str, _Value], architecture: str, template: str) -> bool:
    if not template or architecture in _NON_CHAT_ARCHITECTURES:
        return False
    general_type = _str(metadata.get("general.type")).lower()
    if any(word in general_type for word in _NON_CHAT_FILE_TYPES):
        return False
    # An embedding or reranking model built on a chat architecture (Qwen3-Embedding) pools.
    pooling = _int(metadata.get(f"{architecture}.pooling_type"))
    return not pooling or pooling < 0


def _info(
    path: Path,
    size: int,
    metadata: dict[str, _Value],
    parameters: int,
    elements_by_type: Counter[int],
) -> GgufInfo:
    architecture = _str(metadata.get("general.architecture"))
    template = _str(metadata.get("tokenizer.chat_template"))

    def number(key: str) -> int:
        return _int(metadata.get(f"{architecture}.{key}")) or 0

    n_heads = number("attention.head_count")
    embedding_length = number("embedding_length")
    key_length = number("attention.key_length") or (embedding_length // n_heads if n_heads else 0)
    return GgufInfo(
        path=path,
        file_size=size,
        name=_str(metadata.get("general.name")) or path.stem,
        architecture=architecture,
        parameters=parameters,
        size_label=_str(metadata.get("general.size_label")) or size_label_for(parameters),
        quantization=_quantization(metadata, elements_by_type),
        context_length=number("context_length"),
        license=_str(metadata.get("general.license")),
        reasoning="<think>" in template,
        chat=_is_chat(metadata, architecture, template),
        n_layers=number("block_count"),
        n_heads=n_heads,
        n_kv_heads=number("attention.head_count_kv") or n_heads,
        embedding_length=embedding_length,
        key_length=key_length,
    )
