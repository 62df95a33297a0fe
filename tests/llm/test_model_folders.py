"""Models GPT4All or LM Studio already downloaded are found, so nobody downloads one twice."""

from __future__ import annotations

from pathlib import Path

import pytest
from model_files import link_model

from app.model_files.model_folders import (
    LocalModel,
    ModelFolder,
    find_local_models,
    known_model_folders,
)


def broken_file(target: Path, content: bytes = b"this download failed halfway\n") -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(content)
    return target


def by_name(models: list[LocalModel]) -> dict[str, LocalModel]:
    return {model.path.name: model for model in models}


@pytest.fixture
def fake_home(tmp_path: Path, starter_model_path: Path) -> Path:
    """A Linux home where GPT4All and LM Studio each downloaded the starter model."""
    home = tmp_path / "home"
    gpt4all = home / ".local" / "share" / "nomic.ai" / "GPT4All"
    link_model(starter_model_path, gpt4all / "smollm2-135m-instruct.Q4_1.gguf")
    broken_file(gpt4all / "broken.gguf")
    broken_file(
        gpt4all / "incomplete-qwen3-8b.Q4_K_M.gguf"
    )  # GPT4All's name for an unfinished download
    lmstudio = home / ".lmstudio" / "models" / "HuggingFaceTB" / "SmolLM2-135M-Instruct-GGUF"
    link_model(starter_model_path, lmstudio / "SmolLM2-135M-Instruct.Q4_1.GGUF")
    link_model(
        starter_model_path, lmstudio / "mmproj-SmolLM2-f16.gguf"
    )  # a vision projector, not a model
    broken_file(lmstudio / "SmolLM2-135M-Instruct.Q8_0.gguf.part")
    link_model(starter_model_path, lmstudio / ".hidden.gguf")
    return home


def test_known_folders_list_fathom_then_gpt4all_then_lm_studio(
    tmp_path: Path, fake_home: Path
) -> None:
    fathom = tmp_path / "fathom-models"
    fathom.mkdir()
    folders = known_model_folders(fathom, home=fake_home, environ={}, system="Linux")
    assert folders == [
        ModelFolder("fathom", fathom),
        ModelFolder("gpt4all", fake_home / ".local" / "share" / "nomic.ai" / "GPT4All"),
        ModelFolder("lmstudio", fake_home / ".lmstudio" / "models"),
    ]


def test_models_from_gpt4all_and_lm_studio_are_found_with_their_real_header(
    tmp_path: Path, fake_home: Path, starter_model_path: Path
) -> None:
    """Both downloads of SmolLM2 are offered, named from their headers, with where they came from."""
    folders = known_model_folders(
        tmp_path / "no-fathom-models-yet", home=fake_home, environ={}, system="Linux"
    )
    models = by_name(find_local_models(folders))
    assert sorted(models) == [
        "SmolLM2-135M-Instruct.Q4_1.GGUF",
        "broken.gguf",
        "smollm2-135m-instruct.Q4_1.gguf",
    ]

    gpt4all = models["smollm2-135m-instruct.Q4_1.gguf"]
    lmstudio = models["SmolLM2-135M-Instruct.Q4_1.GGUF"]
    assert (gpt4all.source, lmstudio.source) == ("gpt4all", "lmstudio")
    for model in (gpt4all, lmstudio):
        assert model.info is not None and model.problem == ""
        assert model.info.name == "Smollm2 135M 8k Lc100K Mix1 Ep2"
        assert (model.info.architecture, model.info.quantization, model.info.size_label) == (
            "llama",
            "Q4_1",
            "135M",
        )
        assert model.info.chat is True
        assert model.info.file_size == starter_model_path.stat().st_size
    assert lmstudio.path.parent.name == "SmolLM2-135M-Instruct-GGUF"  # nested publisher/repo/file


def test_a_broken_file_is_listed_with_its_problem(tmp_path: Path, fake_home: Path) -> None:
    """A damaged download shows why it cannot be used instead of breaking the list."""
    folders = known_model_folders(tmp_path / "none", home=fake_home, environ={}, system="Linux")
    broken = by_name(find_local_models(folders))["broken.gguf"]
    assert broken.source == "gpt4all"
    assert broken.info is None
    assert "broken.gguf is not a GGUF model file" in broken.problem


def test_the_same_file_reached_twice_is_listed_once_for_the_first_folder(
    tmp_path: Path, fake_home: Path
) -> None:
    """A model LM Studio reaches through a link into GPT4All's folder is not offered twice."""
    gpt4all = fake_home / ".local" / "share" / "nomic.ai" / "GPT4All"
    lm_models = fake_home / ".lmstudio" / "models"
    (lm_models / "linked-gpt4all").symlink_to(gpt4all, target_is_directory=True)
    (lm_models / "loop").symlink_to(
        lm_models, target_is_directory=True
    )  # must not be walked forever
    (lm_models / "alias.gguf").symlink_to(gpt4all / "smollm2-135m-instruct.Q4_1.gguf")
    folders = known_model_folders(tmp_path / "none", home=fake_home, environ={}, system="Linux")
    models = find_local_models([*folders, *folders])
    names = [model.path.name for model in models]
    assert sorted(names) == [
        "SmolLM2-135M-Instruct.Q4_1.GGUF",
        "broken.gguf",
        "smollm2-135m-instruct.Q4_1.gguf",
    ]
    assert by_name(models)["smollm2-135m-instruct.Q4_1.gguf"].source == "gpt4all"


def test_only_the_first_part_of_a_split_model_is_listed(
    tmp_path: Path, starter_model_path: Path
) -> None:
    """llama.cpp opens a split model by its first part; the other parts are not separate models."""
    folder = tmp_path / "models"
    link_model(starter_model_path, folder / "big-model-00001-of-00002.gguf")
    broken_file(folder / "big-model-00002-of-00002.gguf")
    models = find_local_models([ModelFolder("fathom", folder)])
    assert [model.path.name for model in models] == ["big-model-00001-of-00002.gguf"]


def test_fathom_s_own_folder_is_searched_first(
    tmp_path: Path, fake_home: Path, starter_model_path: Path
) -> None:
    fathom = tmp_path / "fathom-models"
    link_model(starter_model_path, fathom / "SmolLM2-135M-Instruct.Q4_1.gguf")
    folders = known_model_folders(fathom, home=fake_home, environ={}, system="Linux")
    models = find_local_models(folders)
    assert models[0].source == "fathom"
    assert models[0].info is not None and models[0].info.architecture == "llama"


def test_missing_folders_are_left_out_and_duplicates_listed_once(tmp_path: Path) -> None:
    """A computer without GPT4All or LM Studio gets just Fathom's folder (if it exists)."""
    home = tmp_path / "empty-home"
    home.mkdir()
    assert known_model_folders(tmp_path / "missing", home=home, environ={}, system="Linux") == []
    gpt4all = home / ".local" / "share" / "nomic.ai" / "GPT4All"
    gpt4all.mkdir(parents=True)
    folders = known_model_folders(gpt4all, home=home, environ={}, system="Linux")
    assert folders == [ModelFolder("fathom", gpt4all)]


def test_xdg_data_home_moves_gpt4all_s_folder(tmp_path: Path) -> None:
    home = tmp_path / "home"
    data = tmp_path / "xdg-data"
    (data / "nomic.ai" / "GPT4All").mkdir(parents=True)
    (home / ".local" / "share" / "nomic.ai" / "GPT4All").mkdir(
        parents=True
    )  # ignored: XDG_DATA_HOME wins
    folders = known_model_folders(
        tmp_path / "none", home=home, environ={"XDG_DATA_HOME": str(data)}, system="Linux"
    )
    assert folders == [ModelFolder("gpt4all", data / "nomic.ai" / "GPT4All")]


def test_gpt4all_s_configured_download_folder_is_searched(
    tmp_path: Path, starter_model_path: Path
) -> None:
    """A user who moved GPT4All's downloads (Settings → Download Path) still has them found."""
    home = tmp_path / "home"
    custom = tmp_path / "My Models, big disk"
    link_model(starter_model_path, custom / "smollm2.gguf")
    settings = home / ".config" / "nomic.ai" / "GPT4All.ini"
    settings.parent.mkdir(parents=True)
    # QSettings quotes a value that holds a comma
    settings.write_text(f'[General]\nfontSize=Small\nmodelPath="{custom}/"\nthreadCount=4\n')
    folders = known_model_folders(tmp_path / "none", home=home, environ={}, system="Linux")
    assert [(folder.source, folder.path.resolve()) for folder in folders] == [
        ("gpt4all", custom.resolve())
    ]
    models = find_local_models(folders)
    assert [(model.source, model.path.name) for model in models] == [("gpt4all", "smollm2.gguf")]
    assert models[0].info is not None and models[0].info.quantization == "Q4_1"


def test_macos_layout(tmp_path: Path, starter_model_path: Path) -> None:
    home = tmp_path / "Users" / "ada"
    gpt4all = home / "Library" / "Application Support" / "nomic.ai" / "GPT4All"
    link_model(starter_model_path, gpt4all / "smollm2.gguf")
    custom = tmp_path / "Volumes" / "External" / "gpt4all"
    custom.mkdir(parents=True)
    settings = home / ".config" / "nomic.ai" / "GPT4All.ini"
    settings.parent.mkdir(parents=True)
    settings.write_text(f"[General]\nmodelPath={custom}\n")
    old_lmstudio = home / ".cache" / "lm-studio" / "models"
    link_model(
        starter_model_path, old_lmstudio / "lmstudio-community" / "SmolLM2-GGUF" / "smollm2.gguf"
    )
    folders = known_model_folders(tmp_path / "none", home=home, environ={}, system="Darwin")
    assert folders == [
        ModelFolder("gpt4all", gpt4all),
        ModelFolder("gpt4all", custom),
        ModelFolder("lmstudio", old_lmstudio),
    ]
    assert [model.source for model in find_local_models(folders)] == ["gpt4all", "lmstudio"]


def test_windows_layout(tmp_path: Path, starter_model_path: Path) -> None:
    home = tmp_path / "Users" / "ada"
    local = home / "AppData" / "Local"
    roaming = home / "AppData" / "Roaming"
    gpt4all = local / "nomic.ai" / "GPT4All"
    link_model(starter_model_path, gpt4all / "smollm2.gguf")
    custom = tmp_path / "D" / "models"
    custom.mkdir(parents=True)
    settings = roaming / "nomic.ai" / "GPT4All.ini"
    settings.parent.mkdir(parents=True)
    settings.write_text(f"[General]\r\nmodelPath={custom}\r\n")
    lmstudio = home / ".lmstudio" / "models"
    lmstudio.mkdir(parents=True)
    environ = {
        "LOCALAPPDATA": str(local),
        "APPDATA": str(roaming),
        "XDG_DATA_HOME": str(tmp_path / "ignored"),
    }
    folders = known_model_folders(tmp_path / "none", home=home, environ=environ, system="Windows")
    assert folders == [
        ModelFolder("gpt4all", gpt4all),
        ModelFolder("gpt4all", custom),
        ModelFolder("lmstudio", lmstudio),
    ]
    assert [model.path.name for model in find_local_models(folders)] == ["smollm2.gguf"]


def test_an_unreadable_settings_file_or_empty_model_path_is_ignored(tmp_path: Path) -> None:
    home = tmp_path / "home"
    settings = home / ".config" / "nomic.ai" / "GPT4All.ini"
    settings.parent.mkdir(parents=True)
    settings.write_bytes(b"[General]\nmodelPath=\n\xff\xfe garbage\n")
    assert known_model_folders(tmp_path / "none", home=home, environ={}, system="Linux") == []


def test_an_empty_list_of_folders_finds_nothing(tmp_path: Path) -> None:
    assert find_local_models([]) == []
    assert find_local_models([ModelFolder("fathom", tmp_path / "does-not-exist")]) == []
