"""The catalog of recommended models: the shipped file, an organisation's own (a file or a
URL on loopback), and entries that are refused with a sentence naming them."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from file_server import FileServer

from app.model_files.catalog import (
    CATALOG_ENV,
    CatalogError,
    load_catalog,
    parse_catalog,
    refresh_catalog,
    shipped_catalog_path,
)

SHA = "ab" * 32


def entry(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": "mirror-model",
        "name": "Mirror Model",
        "url": "https://models.example.org/files/mirror-model.Q4_K_M.gguf",
        "sha256": SHA,
        "size_bytes": 1000,
        "ram_gb": 1.5,
        "context": 8192,
        "license": "Apache-2.0",
        "reasoning": True,
    }
    base.update(changes)
    return base


def write_catalog(path: Path, *entries: dict[str, Any]) -> Path:
    path.write_text(json.dumps({"version": 1, "models": list(entries)}), encoding="utf-8")
    return path


def test_the_shipped_catalog_recommends_reasoning_models_in_three_size_classes() -> None:
    catalog = load_catalog(environ={})
    assert catalog.source == str(shipped_catalog_path()) and catalog.note == ""
    assert [e.id for e in catalog.entries] == ["qwen3-1.7b", "qwen3-4b", "qwen3-8b"]
    for e in catalog.entries:
        assert e.reasoning and e.why and e.license == "Apache-2.0"
        assert e.url.startswith("https://huggingface.co/Qwen/") and "/resolve/main/" in e.url
        assert e.url.endswith("/" + e.file_name) and e.file_name.endswith(".gguf")
        assert len(e.sha256) == 64 and e.size_bytes > 10**9 and e.ollama.startswith("qwen3:")
    sizes = [e.ram_gb for e in catalog.entries]
    assert sizes == sorted(sizes)  # small to large: recommend() relies on it


def test_an_organisation_points_fathom_at_its_own_catalog_file(tmp_path: Path) -> None:
    own = write_catalog(tmp_path / "ours.json", entry())
    from_setting = load_catalog(str(own), environ={})
    assert [e.id for e in from_setting.entries] == ["mirror-model"] and from_setting.note == ""
    assert from_setting.entries[0].file_name == "mirror-model.Q4_K_M.gguf"
    # the environment wins over the setting
    other = write_catalog(tmp_path / "env.json", entry(id="env-model"))
    from_env = load_catalog(str(own), environ={CATALOG_ENV: str(other)})
    assert [e.id for e in from_env.entries] == ["env-model"]


def test_a_hugging_face_entry_resolves_against_a_mirror_endpoint() -> None:
    raw = entry(url=None, hf_repo="Org/Some-GGUF", hf_file="some Q4.gguf", revision="abc123")
    (parsed,) = parse_catalog(json.dumps([raw]), "test", hf_endpoint="http://127.0.0.1:9/mirror/")
    assert parsed.url == "http://127.0.0.1:9/mirror/Org/Some-GGUF/resolve/abc123/some%20Q4.gguf"
    assert parsed.file_name == "some Q4.gguf"


@pytest.mark.parametrize(
    ("raw", "phrase"),
    [
        (entry(sha256="123"), "no valid sha256"),
        ({k: v for k, v in entry().items() if k != "license"}, "lacks license"),
        (entry(url="file:///etc/passwd"), r"not http\(s\)"),
        (entry(file="../escape.gguf"), "unusable file"),
        (entry(size_bytes="big"), "non-numeric"),
        (entry(reasoning="yes"), "reasoning true or false"),
        (entry(id="a b"), "unusable id"),
    ],
)
def test_a_bad_entry_is_refused_with_a_sentence_naming_it(raw: dict[str, Any], phrase: str) -> None:
    with pytest.raises(CatalogError, match=phrase):
        parse_catalog(json.dumps({"models": [raw]}), "ours.json")


def test_a_catalog_listing_one_id_twice_is_refused() -> None:
    with pytest.raises(CatalogError, match="lists the id 'mirror-model' twice"):
        parse_catalog(json.dumps({"models": [entry(), entry()]}), "ours.json")


def test_an_unusable_catalog_file_falls_back_to_the_shipped_one_and_says_why(
    tmp_path: Path,
) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    catalog = load_catalog(str(broken), environ={})
    assert catalog.source == str(shipped_catalog_path()) and len(catalog.entries) == 3
    assert str(broken) in catalog.note and "not valid JSON" in catalog.note
    missing = load_catalog(str(tmp_path / "missing.json"), environ={})
    assert "could not be used" in missing.note and len(missing.entries) == 3


@pytest.fixture
def catalog_server(tmp_path: Path) -> Iterator[FileServer]:
    with FileServer() as server:
        yield server


def test_a_catalog_url_is_fetched_only_when_asked_then_kept(
    tmp_path: Path, catalog_server: FileServer
) -> None:
    served = write_catalog(tmp_path / "served.json", entry(id="served-model"))
    catalog_server.add("/catalog.json", served.read_bytes())
    url = catalog_server.url("/catalog.json")
    cache = tmp_path / "cache"

    before = load_catalog(url, cache_dir=cache, environ={})
    assert catalog_server.requests == []  # listing contacts nothing
    assert "has not been fetched yet" in before.note and len(before.entries) == 3

    fetched = refresh_catalog(url, cache_dir=cache, environ={})
    assert [e.id for e in fetched.entries] == ["served-model"]
    assert [r.path for r in catalog_server.requests] == ["/catalog.json"]

    after = load_catalog(url, cache_dir=cache, environ={})
    assert (
        [e.id for e in after.entries] == ["served-model"]
        and after.note == ""
        and after.source == url
    )
    assert len(catalog_server.requests) == 1  # the kept copy, no second request


def test_a_catalog_url_that_answers_404_is_an_error_and_the_kept_copy_stays(
    tmp_path: Path, catalog_server: FileServer
) -> None:
    catalog_server.add("/missing.json", b"", status=404)
    with pytest.raises(CatalogError, match="HTTP 404"):
        refresh_catalog(
            catalog_server.url("/missing.json"), cache_dir=tmp_path / "cache", environ={}
        )
    assert not (tmp_path / "cache" / "model-catalog.json").exists()


def _raw_entry_text(**raw_values: str) -> str:
    """A catalog whose entry's values are written as given, verbatim JSON (Infinity, 1e400)."""
    text = json.dumps({"models": [entry(**{k: f"@{k}@" for k in raw_values})]})
    for key, value in raw_values.items():
        text = text.replace(f'"@{key}@"', value)
    return text


@pytest.mark.parametrize(
    ("text", "phrase"),
    [
        (_raw_entry_text(size_bytes="Infinity"), "Infinity is not a number"),
        (_raw_entry_text(size_bytes="1e400"), "size_bytes inf, outside 0 to"),
        (_raw_entry_text(ram_gb="NaN"), "NaN is not a number"),
        (_raw_entry_text(ram_gb="1e308"), "ram_gb 1e\\+308, outside 0 to 4,096"),
        (
            _raw_entry_text(size_bytes="1" + "0" * 36),
            "size_bytes 1000000000000000000000000000000000000, outside",
        ),
        (_raw_entry_text(context="true"), "non-numeric context"),
        (json.dumps({"models": [entry(file="model\u0000.gguf")]}), "unusable file"),
        (json.dumps({"models": [entry(file="evil\u202efgg.gguf")]}), "unusable file"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ],
    ids=["infinity", "1e400", "nan", "ram-1e308", "size-1e36", "bool", "nul", "rlo", "deep"],
)
def test_numbers_names_and_shapes_no_catalog_can_mean_are_refused_with_a_sentence(
    text: str, phrase: str
) -> None:
    """Each of these ended `fathom models list` and `fathom doctor` in a traceback, or (10^36
    bytes) was listed as fitting this machine."""
    with pytest.raises(CatalogError, match=phrase):
        parse_catalog(text, "ours.json")


def test_a_catalog_with_a_bad_number_falls_back_and_the_commands_say_so(tmp_path: Path) -> None:
    from fathom_process import run_fathom

    own = tmp_path / "ours.json"
    own.write_text(_raw_entry_text(size_bytes="1e400"), encoding="utf-8")
    env = {**os.environ, "FATHOM_HOME": str(tmp_path / "home"), CATALOG_ENV: str(own)}
    for command in (("models", "list"), ("doctor",)):
        done = run_fathom(*command, env=env, timeout=300)
        assert "Traceback" not in done.stderr + done.stdout, done.stderr
        assert "could not be used" in done.stderr + done.stdout, (command, done.stdout, done.stderr)
