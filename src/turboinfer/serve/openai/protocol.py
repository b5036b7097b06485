"""What the OpenAI routes accept, checked in one place against the served model's limits. Every field OpenAI's
chat and completion requests define is either honoured or refused with a 400 that names it and what it accepts;
fields OpenAI does not define are ignored, as OpenAI ignores them. The engine never sees a value it cannot take:
seeds are mapped into its unsigned 64-bit range, temperatures it would round to 0 are greedy, token ids are
checked against the vocabulary (docs/serving.md has the table)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from turboinfer.core.errors import InvalidInput
from turboinfer.runtime.llm.generate import GenerationRequest, Sampling, check_stops
from turboinfer.serve.schema import Fields, json_type

ROLES = ("system", "developer", "user", "assistant")
TOOL_ROLES = ("tool", "function")
SEEDS = (-(2**63), 2**64 - 1)
"""Seeds taken: OpenAI's signed 64-bit range and the unsigned one (mapped modulo 2**64 for the engine)."""
NO_TOOLS = "tool calling is not supported for this model (no tool-call parser for its chat template)"
UNSUPPORTED: dict[str, tuple[tuple[Any, ...], str]] = {
    "logprobs": ((None, False, 0), "log probabilities are not returned by this server"),
    "top_logprobs": ((None, 0), "log probabilities are not returned by this server"),
    "logit_bias": ((None, {}), "the engines take no per-token bias"),
    "response_format": ((None, {"type": "text"}), "only text output: structured output is not supported for this "
                        "model's engine (docs/serving.md says why)"),
    "echo": ((None, False), "the prompt is not echoed"),
    "best_of": ((None, 1), "one candidate per request"),
    "suffix": ((None, ""), "no insertion after a suffix"),
    "functions": ((None, []), NO_TOOLS),
    "function_call": ((None, "none"), NO_TOOLS),
    "audio": ((None,), "audio output is not supported"),
    "modalities": ((None, ["text"]), "only text output is supported"),
    "prediction": ((None,), "predicted outputs are not supported"),
    "web_search_options": ((None,), "web search is not supported"),
    "reasoning_effort": ((None,), "this model is not a reasoning model"),
    "verbosity": ((None,), "this model has no verbosity setting"),
    "store": ((None, False), "this server stores no completions"),
    "service_tier": ((None, "auto", "default"), "this server has one service tier"),
}  # fmt: skip
"""OpenAI fields this server cannot honour → (the values that mean "not used", why anything else is a 400)."""
FIELDS = frozenset({*UNSUPPORTED, "model", "messages", "prompt", "n", "user", "safety_identifier", "prompt_cache_key",
                    "metadata", "stream", "stream_options", "max_tokens", "max_completion_tokens", "temperature",
                    "top_p", "top_k", "seed", "presence_penalty", "frequency_penalty", "stop", "ignore_eos", "tools",
                    "tool_choice", "parallel_tool_calls"})  # fmt: skip
"""Every field the routes read (an error naming one of them names it as OpenAI's `param`)."""


@dataclass(frozen=True)
class ModelLimits:
    """What one served model takes: the bounds a request is checked against."""

    name: str
    context: int
    max_new_tokens: int
    vocab: int = 0
    """Token ids 0..vocab - 1 (0: unknown, unchecked)."""


@dataclass(frozen=True)
class Completion:
    """One parsed completion request."""

    model: str
    chat: bool
    request: GenerationRequest
    messages: list[dict[str, str]] | None
    fit_max_tokens: bool
    """max_tokens absent: the server's default, or what fits."""
    stream: bool
    include_usage: bool


def model_of(body: Fields) -> str:
    """The request's model name (required)."""
    return body.string("model", required=True) or ""


def parse_completion(body: Fields, chat: bool, limits: ModelLimits) -> Completion:
    """A chat or text completion request, every field checked (InvalidInput names the field)."""
    refuse_unsupported(body)
    refuse_tools(body)
    if body.integer("n") not in (None, 1):
        raise InvalidInput("n must be 1 (one choice per request)")
    for key in ("user", "safety_identifier", "prompt_cache_key"):
        body.string(key)
    body.object("metadata")
    stream = bool(body.boolean("stream"))
    options = body.object("stream_options")
    if options is not None and not stream:
        raise InvalidInput("stream_options is only allowed when stream is true")
    include_usage = bool(options and options.boolean("include_usage"))
    max_tokens = max_tokens_of(body, limits)
    messages = messages_of(body) if chat else None
    prompt = "" if chat else prompt_of(body, limits)
    request = GenerationRequest(prompt, max_tokens or 1, sampling_of(body), stops_of(body),
                                bool(body.boolean("ignore_eos")))  # fmt: skip
    return Completion(model_of(body), chat, request, messages, max_tokens is None, stream, include_usage)


def same(value: Any, unused: Any) -> bool:
    """value is the "not used" value: equal and of the same JSON type (true is not 1)."""
    return value is None if unused is None else json_type(value) == json_type(unused) and value == unused


def refuse_unsupported(body: Fields) -> None:
    """InvalidInput for the first field this server cannot honour that is set to something other than unused."""
    for key, (unused, why) in UNSUPPORTED.items():
        value = body.value.get(key)
        if not any(same(value, u) for u in unused):
            shown = " or ".join("absent" if u is None else repr(u) for u in unused)
            raise InvalidInput(f"{key} is not supported: {why} (accepted: {shown})")


def refuse_tools(body: Fields) -> None:
    """tools, tool_choice and parallel_tool_calls: type-checked, then refused unless they ask for no tool."""
    if body.array("tools"):
        raise InvalidInput(f"tools: {NO_TOOLS}; send the request without tools")
    choice = body.value.get("tool_choice")
    if choice is not None and not (isinstance(choice, str | dict)):
        raise InvalidInput(f"tool_choice must be a string or an object, got {json_type(choice)}")
    if choice not in (None, "none"):
        raise InvalidInput("tool_choice is only allowed when tools are specified (only 'none' without tools)")
    if body.boolean("parallel_tool_calls") is not None:
        raise InvalidInput("parallel_tool_calls is only allowed when tools are specified")


def max_tokens_of(body: Fields, limits: ModelLimits) -> int | None:
    """max_completion_tokens, or max_tokens (its old name): 1..the server's max_new_tokens; None when neither."""
    high = limits.max_new_tokens
    values = {k: body.integer(k, low=1, high=high) for k in ("max_completion_tokens", "max_tokens")}
    given = {k: v for k, v in values.items() if v is not None}
    if len(set(given.values())) > 1:
        raise InvalidInput("max_tokens and max_completion_tokens disagree; send one of them")
    return next(iter(given.values()), None)


def bounded(body: Fields, key: str, low: float, high: float) -> float | None:
    """A finite number field within [low, high]."""
    value = body.number(key)
    if value is not None and not (math.isfinite(value) and low <= value <= high):
        raise InvalidInput(f"{key} must be between {low:g} and {high:g}, got {value:g}")
    return value


def sampling_of(body: Fields) -> Sampling:
    """temperature 0..2 (default 1), top_p 0..1, top_k (extension; -1 or 0: off), seed, presence and frequency
    penalties -2..2, made safe for every engine (Sampling.engine_safe)."""
    temperature, top_p = bounded(body, "temperature", 0, 2), bounded(body, "top_p", 0, 1)
    top_k = body.integer("top_k", low=-1, high=2**31 - 1)
    seed = body.integer("seed", low=SEEDS[0], high=SEEDS[1])
    penalties = [bounded(body, key, -2, 2) or 0.0 for key in ("presence_penalty", "frequency_penalty")]
    return Sampling.engine_safe(1.0 if temperature is None else temperature, 1.0 if top_p is None else top_p,
                                0 if top_k in (None, -1) else int(top_k), seed, *penalties)  # fmt: skip


def messages_of(body: Fields) -> list[dict[str, str]]:
    """The chat's messages: role and text content (a string, or an array of text parts); a message's name is
    type-checked (chat templates do not show it); tool messages and tool calls are refused."""
    messages = body.objects("messages", required=True)
    if not messages:
        raise InvalidInput("messages must not be empty")
    out = []
    for message in messages:
        role = message.string("role", required=True)
        if role in TOOL_ROLES:
            raise InvalidInput(f"{message.where('role')} {role!r}: {NO_TOOLS}")
        if role not in ROLES:
            raise InvalidInput(f"{message.where('role')} must be one of {', '.join(ROLES)}, got {role!r}")
        message.string("name")
        if message.array("tool_calls") or message.value.get("function_call") is not None:
            raise InvalidInput(f"{message.where('tool_calls')}: {NO_TOOLS}")
        message.string("refusal")
        out.append({"role": "system" if role == "developer" else role, "content": content_of(message)})
    return out


def content_of(message: Fields) -> str:
    """A message's text: a string, or the text of an array of text parts."""
    if not isinstance(message.value.get("content"), list):
        return message.string("content", required=True) or ""
    parts = message.objects("content")
    for part in parts:
        kind = part.string("type", required=True)
        if kind != "text":
            raise InvalidInput(f"{part.path}.type must be 'text' (only text content is supported), got {kind!r}")
    return "".join(part.string("text", required=True) or "" for part in parts)


def prompt_of(body: Fields, limits: ModelLimits) -> str | tuple[int, ...]:
    """A completion's prompt: a string, an array of one string, or token ids (an array, or an array of one
    array) within the vocabulary."""
    value = body.value.get("prompt")
    if isinstance(value, list) and value and all(isinstance(v, str | list) for v in value):
        if len(value) != 1:
            raise InvalidInput("prompt must be one prompt (this server answers one prompt per request)")
        body = Fields({"prompt": value[0]}, "request body")
        value = value[0]
    if isinstance(value, str):
        if not value:
            raise InvalidInput("prompt must not be empty")
        return value
    ids = body.integers("prompt", required=True) or []
    if not ids:
        raise InvalidInput("prompt must be a non-empty string or array of token ids")
    high = (limits.vocab or 2**31) - 1
    bad = next((i for i in ids if not 0 <= i <= high), None)
    if bad is not None:
        where = f"the {limits.vocab}-token vocabulary of {limits.name}" if limits.vocab else "0..2**31 - 1"
        raise InvalidInput(f"prompt token ids must be in 0..{high} ({where}), got {bad}")
    return tuple(ids)


def stops_of(body: Fields) -> tuple[str, ...]:
    """stop: a string or an array of strings (the rule is runtime.llm.generate.check_stops)."""
    value = body.value.get("stop")
    if value is None:
        return ()
    return check_stops((value,) if isinstance(value, str) else tuple(body.array("stop") or ()))
