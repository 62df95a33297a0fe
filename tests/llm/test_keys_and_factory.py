"""API keys stay out of settings; the factory picks the back end a person would expect;
``fathom doctor`` reports what is usable."""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import keyring
import pytest
from keyring.backend import KeyringBackend
from ollama_server import MODEL_NAME, OllamaLoopback

from app.commands import doctor
from app.core.errors import FathomError, ModelUnavailable
from app.core.settings import Settings, replace_setting, save_settings
from app.llm import keys
from app.llm.factory import make_chat_model, make_chat_model_async, probe_backends, starter_notice
from app.llm.llamacpp import LlamaCppModel
from app.llm.ollama_backend import OllamaModel
from app.llm.openai_backend import OpenAICompatibleModel
from app.llm.starter import STARTER_NAME, STARTER_NOTICE


class MemoryKeyring(KeyringBackend):
    """A keyring backend kept in memory (the OS keyring is not available on test machines)."""

    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.store: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.store.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.store[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        self.store.pop((service, username), None)


@pytest.fixture
def memory_keyring() -> Iterator[MemoryKeyring]:
    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    yield backend
    keyring.set_keyring(previous)


def _no_keyring() -> Iterator[None]:
    from keyring.backends import fail

    previous = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    yield
    keyring.set_keyring(previous)


no_keyring = pytest.fixture(_no_keyring)


def test_api_key_goes_to_the_keyring_under_the_base_url(
    memory_keyring: MemoryKeyring, fathom_home: Path
) -> None:
    url = "https://api.example.org/v1"
    keys.set_api_key(url, "sk-secret")
    assert memory_keyring.store == {("fathom", url): "sk-secret"}
    assert keys.get_api_key(url) == "sk-secret"
    settings = replace_setting(Settings(), "model.openai.base_url", url)
    save_settings(settings, fathom_home / "settings.toml")
    assert "sk-secret" not in (fathom_home / "settings.toml").read_text()
    model = make_chat_model(replace_setting(settings, "model.backend", "openai"))
    assert isinstance(model, OpenAICompatibleModel)
    keys.set_api_key(url, "")
    assert keys.get_api_key(url) is None


def test_without_a_keyring_it_says_so_and_reads_the_environment(
    no_keyring: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(FathomError) as caught:
        keys.set_api_key("https://api.example.org/v1", "sk-secret")
    assert "No OS keyring" in str(caught.value) and "FATHOM_API_KEY" in str(caught.value)
    assert keys.get_api_key("https://api.example.org/v1") is None
    monkeypatch.setenv("FATHOM_API_KEY", "sk-from-env")
    assert keys.get_api_key("https://api.example.org/v1") == "sk-from-env"
    assert "FATHOM_API_KEY" in keys.keyring_description()


def _auto(unused_port: int) -> Settings:
    return replace_setting(Settings(), "model.ollama.host", f"http://127.0.0.1:{unused_port}")


async def test_auto_without_ollama_uses_the_starter_model_and_says_it_is_tiny(
    unused_tcp_port: int,
) -> None:
    model = await make_chat_model_async(_auto(unused_tcp_port))
    assert isinstance(model, LlamaCppModel)
    assert model.model_name == STARTER_NAME
    assert starter_notice(model) == STARTER_NOTICE
    await model.aclose()


async def test_auto_prefers_a_reachable_ollama(ollama_loopback: OllamaLoopback) -> None:
    settings = replace_setting(Settings(), "model.ollama.host", ollama_loopback.url)
    model = await make_chat_model_async(settings)
    assert isinstance(model, OllamaModel) and model.model_name == MODEL_NAME
    assert starter_notice(model) is None
    await model.aclose()
    blocking = make_chat_model(settings)  # the synchronous probe finds it too
    assert isinstance(blocking, OllamaModel)
    await blocking.aclose()


def test_a_configured_gguf_that_is_missing_is_reported(tmp_path: Path) -> None:
    settings = replace_setting(Settings(), "model.llamacpp.model_path", str(tmp_path / "gone.gguf"))
    settings = replace_setting(settings, "model.backend", "llamacpp")
    with pytest.raises(ModelUnavailable) as caught:
        make_chat_model(settings)
    assert "gone.gguf" in str(caught.value) and "Settings" in str(caught.value)


def test_explicit_backends_without_their_settings_say_what_to_set() -> None:
    with pytest.raises(ModelUnavailable, match=r"model\.openai\.base_url"):
        make_chat_model(replace_setting(Settings(), "model.backend", "openai"))
    with pytest.raises(ModelUnavailable, match=r"model\.ollama\.model"):
        make_chat_model(replace_setting(Settings(), "model.backend", "ollama"))


async def test_probe_lists_every_backend(ollama_loopback: OllamaLoopback) -> None:
    settings = replace_setting(Settings(), "model.ollama.host", ollama_loopback.url)
    statuses = {s.name: s for s in await probe_backends(settings)}
    assert statuses["ollama"].reachable and statuses["ollama"].models == [MODEL_NAME]
    assert statuses["llamacpp"].reachable and statuses["llamacpp"].models == [STARTER_NAME]
    assert not statuses["openai"].reachable and "not configured" in statuses["openai"].detail
    # `fathom doctor --json` prints these as they are
    printed = json.loads(json.dumps([dataclasses.asdict(s) for s in statuses.values()]))
    assert {s["name"]: s["reachable"] for s in printed} == {
        "ollama": True,
        "llamacpp": True,
        "openai": False,
    }


def test_doctor_json_lists_llamacpp_with_the_starter_model_as_usable(
    capsys: pytest.CaptureFixture[str], fathom_home: Path, unused_tcp_port: int
) -> None:
    save_settings(_auto(unused_tcp_port), fathom_home / "config" / "settings.toml")
    parser = argparse.ArgumentParser()
    doctor.add_arguments(parser)
    assert doctor.run(parser.parse_args(["--json"])) == 0
    report = json.loads(capsys.readouterr().out)
    backends = {b["name"]: b for b in report["backends"]}
    assert backends["llamacpp"]["reachable"] is True
    assert STARTER_NAME in backends["llamacpp"]["models"]
    assert backends["ollama"]["reachable"] is False
    assert "ollama serve" in backends["ollama"]["detail"]
    assert report["starter_model"]["present"] is True
    assert Path(report["starter_model"]["path"]).is_file()
    assert report["paths"]["data_dir"].startswith(str(fathom_home))
    for name in ("fathom", "python", "llama_cpp", "pymilvus", "docling", "PySide6"):
        assert report["versions"][name], name
    assert report["usable"] is True


def test_doctor_human_report_names_each_backend(
    capsys: pytest.CaptureFixture[str], fathom_home: Path, unused_tcp_port: int
) -> None:
    save_settings(_auto(unused_tcp_port), fathom_home / "config" / "settings.toml")
    parser = argparse.ArgumentParser()
    doctor.add_arguments(parser)
    assert doctor.run(parser.parse_args([])) == 0
    out = capsys.readouterr().out
    assert "ok llamacpp" in out and STARTER_NAME in out and "Versions" in out
    assert "-- ollama" in out and "ollama serve" in out  # the unreachable one says how to start it
    research = out.split("Research model\n", 1)[1].splitlines()[0]
    assert research.startswith(
        f"  {STARTER_NAME}: fits, needs "
    )  # where it is said once: "(starter)"
