"""One list of models: what other tools already downloaded is found (never downloaded
twice), the catalog fills in the rest, one row is the research model, and choosing or
removing a model changes the settings as a user expects."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from model_files import link_model

from app.core.paths import AppPaths, app_paths
from app.core.settings import Settings, replace_setting
from app.llm.ollama_client import OllamaModelInfo
from app.model_files.catalog import Catalog, load_catalog, parse_catalog
from app.model_files.machine_fit import GIB, Machine
from app.model_files.model_inventory import (
    STARTER_KEY,
    ModelChoiceError,
    find_row,
    list_models,
    model_in_use,
    recommend,
    removable_file,
    settings_using,
    settings_without,
)

ROOMY = Machine(
    total_ram=32 * GIB, available_ram=24 * GIB, cpu_count=8, gpu_offload=False, free_disk=500 * GIB
)


@pytest.fixture
def paths() -> AppPaths:
    return app_paths().ensure()


@pytest.fixture
def fake_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    return tmp_path / "home"


def test_a_model_gpt4all_already_downloaded_is_listed_from_its_header_not_its_name(
    paths: AppPaths, fake_home: Path, starter_model_path: Path
) -> None:
    gpt4all = fake_home / ".local" / "share" / "nomic.ai" / "GPT4All"
    local = link_model(starter_model_path, gpt4all / "renamed-by-the-user.gguf")
    rows = list_models(Settings(), paths, load_catalog(environ={}), ROOMY, home=fake_home)
    (row,) = [r for r in rows if r.source == "gpt4all"]
    assert row.path == str(local) and row.installed and row.key == str(local)
    assert (
        row.name == "Smollm2 135M 8k Lc100K Mix1 Ep2"
    )  # the header's general.name, not the file name
    assert (row.parameters, row.quantization, row.context) == ("135M", "Q4_1", 8192)
    assert row.chat and row.reasoning is False and row.fit.verdict == "fits"
    assert row.ram_needed > row.size_bytes  # weights + context cache + working memory
    assert row.source_label == "GPT4All"


def test_a_catalog_model_found_in_another_tools_folder_is_not_offered_for_download(
    paths: AppPaths, fake_home: Path, starter_model_path: Path, tmp_path: Path
) -> None:
    size = starter_model_path.stat().st_size
    raw = {
        "id": "smol",
        "name": "Smol (catalog)",
        "url": "http://127.0.0.1:9/smol-mirror.gguf",
        "sha256": "0" * 64,
        "size_bytes": size,
        "ram_gb": 0.5,
        "context": 8192,
        "license": "Apache-2.0",
        "reasoning": False,
        "why": "A test entry.",
    }
    catalog = Catalog(parse_catalog(json.dumps([raw]), "test"), "test")
    lmstudio = fake_home / ".lmstudio" / "models" / "publisher" / "repo"
    local = link_model(starter_model_path, lmstudio / "smol-mirror.gguf")
    rows = list_models(Settings(), paths, catalog, ROOMY, home=fake_home)
    assert not [r for r in rows if r.source == "catalog"]  # already here: nothing to download
    (row,) = [r for r in rows if r.source == "lmstudio"]
    assert row.catalog_id == "smol" and row.why == "A test entry." and row.path == str(local)
    # it can be chosen by its catalog id
    assert find_row(rows, "smol") == row
    # but Fathom never deletes another program's file
    with pytest.raises(ModelChoiceError, match="belongs to LM Studio"):
        removable_file(row, paths)


def test_the_starter_is_the_research_model_until_another_is_chosen(
    paths: AppPaths, fake_home: Path, starter_model_path: Path
) -> None:
    rows = list_models(Settings(), paths, load_catalog(environ={}), ROOMY, home=fake_home)
    assert rows[0].key == STARTER_KEY and rows[0].in_use and sum(r.in_use for r in rows) == 1
    assert [r.key for r in rows if r.source == "catalog"] == ["qwen3-1.7b", "qwen3-4b", "qwen3-8b"]
    with pytest.raises(ModelChoiceError, match="part of the installation"):
        removable_file(rows[0], paths)

    downloaded = link_model(starter_model_path, paths.models_dir / "my-model.gguf")
    rows = list_models(Settings(), paths, load_catalog(environ={}), ROOMY, home=fake_home)
    mine = find_row(rows, "my-model.gguf")
    assert mine.source == "fathom" and not mine.in_use
    chosen = settings_using(mine, Settings())
    assert chosen.model.backend == "llamacpp" and chosen.model.llamacpp.model_path == str(
        downloaded
    )
    rows = list_models(chosen, paths, load_catalog(environ={}), ROOMY, home=fake_home)
    assert find_row(rows, "my-model.gguf").in_use and not find_row(rows, STARTER_KEY).in_use
    assert removable_file(find_row(rows, "my-model.gguf"), paths) == downloaded
    # removing the model in use hands the choice back to "auto"
    after = settings_without(find_row(rows, "my-model.gguf"), chosen)
    assert after.model.backend == "auto" and after.model.llamacpp.model_path == ""
    # the starter is chosen back by its key, with an empty path (it moves with the install)
    back = settings_using(find_row(rows, STARTER_KEY), chosen)
    assert back.model.llamacpp.model_path == "" and back.model.backend == "llamacpp"


def test_a_catalog_model_not_downloaded_cannot_be_used_yet(
    paths: AppPaths, fake_home: Path
) -> None:
    rows = list_models(Settings(), paths, load_catalog(environ={}), ROOMY, home=fake_home)
    with pytest.raises(ModelChoiceError, match="fathom models download qwen3-4b"):
        settings_using(find_row(rows, "qwen3-4b"), Settings())
    with pytest.raises(ModelChoiceError, match="No model 'nope'"):
        find_row(rows, "nope")


def test_ollama_models_are_listed_and_chosen_by_name(paths: AppPaths, fake_home: Path) -> None:
    ollama = [
        OllamaModelInfo("qwen3:4b", 2_600_000_000, "4.0B", "Q4_K_M", "qwen3", ""),
        OllamaModelInfo("nomic-embed-text:latest", 270_000_000, "137M", "F16", "nomic-bert", ""),
    ]
    rows = list_models(
        Settings(), paths, load_catalog(environ={}), ROOMY, ollama=ollama, home=fake_home
    )
    qwen = find_row(rows, "ollama:qwen3:4b")
    assert qwen.in_use  # "auto" uses Ollama's first chat model when Ollama runs
    assert qwen.catalog_id == "qwen3-4b" and qwen.reasoning is True  # known from the catalog
    assert "qwen3-4b" not in [
        r.key for r in rows if r.source == "catalog"
    ]  # Ollama has it: not offered
    embed = find_row(rows, "nomic-embed-text:latest")
    assert not embed.chat and not embed.in_use
    chosen = settings_using(qwen, Settings())
    assert (chosen.model.backend, chosen.model.ollama.model) == ("ollama", "qwen3:4b")
    assert model_in_use(chosen, ["qwen3:4b"]) == ("ollama", "qwen3:4b")
    assert settings_without(qwen, chosen).model.ollama.model == ""


def test_the_recommendation_is_the_largest_model_that_leaves_room_for_the_library() -> None:
    catalog = load_catalog(environ={})

    def machine(total_gb: float) -> Machine:
        return Machine(int(total_gb * GIB), int(total_gb * GIB * 0.6), 4, False, 100 * GIB)

    picks = {gb: getattr(recommend(catalog, machine(gb)), "id", None) for gb in (4, 8, 16, 32)}
    assert picks == {4: "qwen3-1.7b", 8: "qwen3-4b", 16: "qwen3-8b", 32: "qwen3-8b"}
    rows = list_models(Settings(), app_paths().ensure(), catalog, machine(8))
    assert [r.key for r in rows if r.recommended] == ["qwen3-4b"]
    assert (
        find_row(rows, "qwen3-8b").fit.verdict == "too big"
    )  # 6.8 GB + the library on 4.8 GB free, 8 GB total


def test_a_broken_gguf_in_fathoms_folder_is_listed_with_its_problem(
    paths: AppPaths, fake_home: Path
) -> None:
    broken = paths.models_dir / "broken.gguf"
    broken.parent.mkdir(parents=True, exist_ok=True)
    broken.write_bytes(b"not a model at all")
    rows = list_models(Settings(), paths, load_catalog(environ={}), ROOMY, home=fake_home)
    row = find_row(rows, "broken.gguf")
    assert "not a GGUF model file" in row.problem and not row.chat
    with pytest.raises(ModelChoiceError, match="cannot run research"):
        settings_using(row, replace_setting(Settings(), "model.backend", "auto"))
