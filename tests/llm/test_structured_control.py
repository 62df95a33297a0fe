"""Control flow around structured output and HTTP retries, driven deterministically.

The model output here is scripted on purpose: these tests prove the repair and
retry logic, not the model (the real-model tests are in the back-end files).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from app.core.errors import StructuredOutputError
from app.core.models import Usage
from app.llm.base import Message
from app.llm.openai_backend import OpenAICompatibleModel
from app.llm.structured import (
    RawReply,
    harden_schema,
    parse_json,
    structured_with_repair,
    worst_case_chars,
)

SCHEMA = {
    "type": "object",
    "properties": {"queries": {"type": "array", "items": {"type": "string"}}},
}
ASK: list[Message] = [{"role": "user", "content": "Plan searches."}]


def _scripted(replies: list[str]) -> tuple[Any, list[Sequence[Message]]]:
    seen: list[Sequence[Message]] = []

    async def generate(messages: Sequence[Message]) -> RawReply:
        seen.append(messages)
        return RawReply(
            content=replies[len(seen) - 1],
            reasoning="",
            usage=Usage(completion_tokens=5, model="m"),
        )

    return generate, seen


async def test_an_invalid_reply_is_repaired_once_with_the_error_sent_back() -> None:
    generate, seen = _scripted(['{"queries": [1, 2]}', '{"queries": ["a", "b"]}'])
    result = await structured_with_repair(generate, ASK, SCHEMA, model_name="m")
    assert result.value == {"queries": ["a", "b"]} and result.repaired
    assert result.usage.completion_tokens == 10 and result.usage.calls == 2
    repair = seen[1]
    assert repair[-2] == {"role": "assistant", "content": '{"queries": [1, 2]}'}
    assert (
        "at queries/" in repair[-1]["content"] and "not of type 'string'" in repair[-1]["content"]
    )


async def test_two_invalid_replies_raise_an_actionable_error() -> None:
    generate, _ = _scripted(["not json", '{"queries": "x"}'])
    with pytest.raises(StructuredOutputError) as caught:
        await structured_with_repair(generate, ASK, SCHEMA, model_name="tiny")
    assert "tiny" in str(caught.value) and "larger model" in caught.value.hint
    usage = caught.value.usage  # both failed attempts are still paid for
    assert usage is not None and usage.calls == 2 and usage.completion_tokens == 10


def test_raw_control_characters_inside_strings_still_parse() -> None:
    assert parse_json('{"a": "line\tone\nline two"}') == {"a": "line\tone\nline two"}


def test_hardening_bounds_strings_and_arrays_to_fit_the_token_budget() -> None:
    roomy = harden_schema(SCHEMA, max_tokens=4096)
    tight = harden_schema(SCHEMA, max_tokens=128)
    assert roomy["additionalProperties"] is False
    assert (
        roomy["properties"]["queries"]["maxItems"]
        >= tight["properties"]["queries"]["maxItems"]
        >= 3
    )
    assert worst_case_chars(tight) < worst_case_chars(roomy)
    kept = harden_schema({"type": "string", "maxLength": 7}, max_tokens=16)
    assert kept["maxLength"] == 7  # the caller's own bounds are kept when they fit
    own = {"type": "object", "properties": {"summary": {"type": "string", "maxLength": 400}}}
    assert harden_schema(own, max_tokens=4096)["properties"]["summary"]["maxLength"] == 400
    lowered = harden_schema(
        own, max_tokens=128
    )  # 400 characters cannot fit: a cut-off reply is invalid JSON
    assert lowered["properties"]["summary"]["maxLength"] < 400
    assert worst_case_chars(lowered) <= 128 * 3
    assert "maxLength" not in SCHEMA["properties"]["queries"]["items"]  # the input is not modified


class _Flaky(BaseHTTPRequestHandler):
    """Answers 503 to the first chat request, then a normal completion."""

    calls = 0

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        type(self).calls += 1
        if type(self).calls == 1:
            status, body = 503, {"error": {"message": "loading model"}}
        else:
            message = {"role": "assistant", "content": "<think>short</think>hello"}
            body = {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": "m",
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
            }
            status = 200
        raw = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


@pytest.fixture
def flaky_server() -> Iterator[str]:
    _Flaky.calls = 0
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Flaky)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()
    thread.join(timeout=5)


async def test_a_transient_http_error_is_retried_once(flaky_server: str) -> None:
    model = OpenAICompatibleModel(flaky_server, "m")
    result = await model.chat([{"role": "user", "content": "hi"}])
    assert _Flaky.calls == 2
    assert result.content == "hello" and result.reasoning == "short"
    await model.aclose()
