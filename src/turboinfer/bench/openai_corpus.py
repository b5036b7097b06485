"""A corpus of wrong and odd OpenAI requests for an LLM server: named cases with the answer each must get (a 400
naming its field, or a 200 for odd values the server honours), and every request field set to values of every
JSON type and to edge values, deterministic for a seed. What no case may get is a 5xx, a hang or a dropped
connection; the server must answer a normal chat after each."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

FIELDS = ("model", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p", "top_k", "seed", "n",
          "stop", "stream", "stream_options", "logprobs", "top_logprobs", "logit_bias", "response_format", "tools",
          "tool_choice", "parallel_tool_calls", "functions", "function_call", "presence_penalty", "frequency_penalty",
          "user", "metadata", "store", "service_tier", "modalities", "audio", "prediction", "reasoning_effort",
          "ignore_eos", "messages.0.role", "messages.0.content", "messages.0.name",
          "messages.0.tool_calls")  # fmt: skip
ODD_VALUES: tuple[Any, ...] = (None, True, False, 0, -1, 1, 2**31, 2**63 - 1, -(2**63), 2**64 - 1, 1e-300, 1e300, 0.5,
                               -0.0, "", "x", "\u202e\u0000\ufeff", [], [1], ["x"], {}, {"type": "x"},
                               [{"type": "function"}])  # fmt: skip


@dataclass(frozen=True)
class OpenAiProbe:
    """One request: its route, body, the mutation that made it, and the answer it must get (None: any non-5xx)."""

    route: str
    """"chat" or "completions"."""
    body: bytes
    kind: str
    status: int | None = None
    says: str = ""
    """Text the error message must hold (a 400's field name and what it accepts)."""


def chat_body(model: str, **fields: Any) -> dict[str, Any]:
    """A valid, short, greedy chat request."""
    return {"model": model, "messages": [{"role": "user", "content": "Name a colour."}], "max_tokens": 2,
            "temperature": 0, **fields}  # fmt: skip


def named_cases(model: str, vocab: int) -> list[OpenAiProbe]:
    """The hand-written cases: each with the status it must get and what a 400 must say."""

    def chat(kind: str, status: int, says: str = "", **fields: Any) -> OpenAiProbe:
        return OpenAiProbe("chat", json.dumps(chat_body(model, **fields)).encode(), kind, status, says)

    def text(kind: str, status: int, prompt: Any, says: str = "") -> OpenAiProbe:
        body = {"model": model, "prompt": prompt, "max_tokens": 2, "temperature": 0}
        return OpenAiProbe("completions", json.dumps(body).encode(), kind, status, says)

    function = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
    user = {"role": "user", "content": "hi"}
    return [
        chat("seed -1 (mapped modulo 2**64)", 200, seed=-1, temperature=0.7),
        chat("seed 2**64 - 1", 200, seed=2**64 - 1, temperature=0.7),
        chat("seed -2**63", 200, seed=-(2**63), temperature=0.7),
        chat("seed 2**64", 400, "seed must be an integer", seed=2**64, temperature=0.7),
        chat("seed a fraction", 400, "seed must be an integer", seed=1.5),
        chat("temperature 1e-300 (greedy)", 200, temperature=1e-300),
        chat("temperature 2", 200, temperature=2),
        chat("temperature 2.5", 400, "temperature must be between 0 and 2", temperature=2.5),
        chat("top_p 1e-300 (greedy)", 200, temperature=0.8, top_p=1e-300),
        chat("top_p 0", 200, temperature=0.8, top_p=0),
        chat("top_k huge", 200, temperature=0.8, top_k=2**31 - 1),
        chat("top_k -2", 400, "top_k must be between", top_k=-2),
        chat("penalties honoured", 200, presence_penalty=2, frequency_penalty=-2, temperature=0.8, seed=1),
        chat("presence_penalty 3", 400, "presence_penalty must be between -2 and 2", presence_penalty=3),
        chat("frequency_penalty a string", 400, "frequency_penalty must be a number", frequency_penalty="1"),
        chat("n 2", 400, "n must be 1", n=2),
        chat("n 1", 200, n=1),
        chat("logprobs true", 400, "logprobs is not supported", logprobs=True),
        chat("logprobs false", 200, logprobs=False),
        chat("top_logprobs 5", 400, "top_logprobs is not supported", top_logprobs=5),
        chat("logit_bias", 400, "logit_bias is not supported", logit_bias={"50256": -100}),
        chat("logit_bias empty", 200, logit_bias={}),
        chat("response_format json_object", 400, "response_format is not supported",
             response_format={"type": "json_object"}),
        chat("response_format json_schema", 400, "response_format is not supported",
             response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object"}}}),
        chat("response_format text", 200, response_format={"type": "text"}),
        chat("tools", 400, "tools: tool calling is not supported for this model", tools=[function]),
        chat("tools a string", 400, "tools must be an array", tools="get_weather"),
        chat("tools empty", 200, tools=[]),
        chat("tool_choice auto", 400, "tool_choice is only allowed when tools are specified", tool_choice="auto"),
        chat("tool_choice a number", 400, "tool_choice must be a string or an object", tool_choice=3),
        chat("tool_choice none", 200, tool_choice="none"),
        chat("parallel_tool_calls", 400, "parallel_tool_calls is only allowed", parallel_tool_calls=True),
        chat("parallel_tool_calls a string", 400, "parallel_tool_calls must be a boolean", parallel_tool_calls="x"),
        chat("functions", 400, "functions is not supported", functions=[function["function"]]),
        chat("function_call auto", 400, "function_call is not supported", function_call="auto"),
        chat("message name a number", 400, "messages[0].name must be a string",
             messages=[{"role": "user", "content": "hi", "name": 5}]),
        chat("message name", 200, messages=[{"role": "user", "content": "hi", "name": "ada"}]),
        chat("tool_calls a string", 400, "messages[1].tool_calls must be an array",
             messages=[user, {"role": "assistant", "content": "x", "tool_calls": "call"}]),
        chat("tool_calls", 400, "messages[1].tool_calls: tool calling is not supported",
             messages=[user, {"role": "assistant", "content": None, "tool_calls": [{"id": "1", "type": "function"}]}]),
        chat("tool message", 400, "messages[1].role 'tool'", messages=[user, {"role": "tool", "content": "x"}]),
        chat("image part", 400, "only text content is supported",
             messages=[{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]),
        chat("audio", 400, "audio is not supported", audio={"voice": "alloy", "format": "wav"}),
        chat("modalities audio", 400, "modalities is not supported", modalities=["text", "audio"]),
        chat("modalities text", 200, modalities=["text"]),
        chat("store true", 400, "store is not supported", store=True),
        chat("service_tier flex", 400, "service_tier is not supported", service_tier="flex"),
        chat("service_tier auto", 200, service_tier="auto"),
        chat("reasoning_effort", 400, "reasoning_effort is not supported", reasoning_effort="high"),
        chat("max_tokens and max_completion_tokens disagree", 400, "disagree", max_tokens=2, max_completion_tokens=3),
        chat("max_completion_tokens", 200, max_completion_tokens=2),
        chat("max_tokens a string", 400, "max_tokens must be an integer", max_tokens="2"),
        chat("stop empty string", 400, "stop must be a string or an array", stop=""),
        chat("stop unicode", 200, stop=["\u00e9\U0001f600"]),
        chat("unknown extra fields (ignored)", 200, frobnicate={"x": [1]}, min_p=0.1),
        chat("metadata and user", 200, metadata={"k": "v"}, user="u-1", prompt_cache_key="k"),
        chat("unicode content", 200,
             messages=[{"role": "user", "content": "\u202e\u0000\ufeff\U0001f600 \u05e9\u05dc"}]),
        chat("stream_options without stream", 400, "stream_options is only allowed", stream_options={}),
        text("token ids beyond the vocabulary", 400, [1, 10**9], f"0..{vocab - 1}"),
        text("the last token id", 200, [1, vocab - 1]),
        text("a negative token id", 400, [-1], "prompt token ids must be in"),
        text("token ids in one array", 200, [[1, 2, 3]]),
        text("two prompts", 400, ["a", "b"], "one prompt"),
        text("a fractional token id", 400, [1.5], "prompt[0] must be an integer"),
        text("an empty prompt", 400, "", "prompt must not be empty"),
    ]  # fmt: skip


def set_path(body: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """body with the field at a dotted path ("messages.0.role") set to value (deep-copied through JSON)."""
    out = json.loads(json.dumps(body))
    node: Any = out
    *parents, last = path.split(".")
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    node[last] = value
    return out


def mutations(model: str, count: int | None = None, seed: int = 0) -> list[OpenAiProbe]:
    """Chat requests with one field set to an odd value: every field × every value, shuffled by the seed, the first
    count of them (any answer but a 5xx is right)."""
    pairs = [(path, value) for path in FIELDS for value in ODD_VALUES]
    random.Random(seed).shuffle(pairs)
    return [OpenAiProbe("chat", json.dumps(set_path(chat_body(model), path, value)).encode(), f"field {path}")
            for path, value in pairs[:count]]  # fmt: skip
