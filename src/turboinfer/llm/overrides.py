"""What a model file gets wrong, fixed without touching it: a JSON file beside a GGUF (`MODEL.gguf.llm.json`) or
inside a Hugging Face folder (`turboinfer.llm.json`) with any of

    {"chat_template": "{% for m in messages %}…",   # Jinja, as Hugging Face writes it; or "chat_template_file"
     "stop_token_ids": [106],                      # end generation at these tokens too (besides the file's EOS)
     "context": 4096}                              # use at most this many tokens (KV cache sizing, request checks)

Every engine then renders chats with that template, stops at those tokens and checks requests against that
context."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from turboinfer.core.errors import InvalidModel

KEYS = ("chat_template", "chat_template_file", "stop_token_ids", "context")


@dataclass(frozen=True)
class Overrides:
    """Fixes read from the override file (empty: none)."""

    chat_template: str = ""
    stop_token_ids: tuple[int, ...] = ()
    context: int = 0
    path: str = ""
    """The file they came from."""

    def apply(self, card: Any) -> Any:
        """The LlmCard with these fixes (a smaller context; a chat template when the file has none)."""
        if not (self.chat_template or self.stop_token_ids or self.context):
            return card
        context = min(card.context, self.context) if self.context else card.context
        return replace(card, context=context, chat_template=card.chat_template or bool(self.chat_template),
                       overrides=self)  # fmt: skip

    def lines(self) -> list[str]:
        """What is overridden, one line each (said with the model's facts)."""
        out = [f"chat template from {self.path}"] if self.chat_template else []
        out += [f"stops at token ids {list(self.stop_token_ids)} too"] if self.stop_token_ids else []
        return out + ([f"context capped at {self.context:,} tokens"] if self.context else [])

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


def overrides_path(source: Path) -> Path:
    """Where a model's override file lives: beside a GGUF file, inside a folder."""
    return source / "turboinfer.llm.json" if source.is_dir() else source.with_name(source.name + ".llm.json")


def read_overrides(source: Path) -> Overrides:
    """The overrides for a model (none when there is no file); InvalidModel naming a bad field."""
    path = overrides_path(source)
    if not path.is_file():
        return Overrides()
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise InvalidModel(f"{path} is not valid JSON: {err}") from None
    unknown = sorted(set(data) - set(KEYS)) if isinstance(data, dict) else ["(not an object)"]
    if unknown:
        raise InvalidModel(f"{path}: unknown fields {', '.join(unknown)}; known: {', '.join(KEYS)}")
    template = data.get("chat_template", "")
    if "chat_template_file" in data:
        try:
            template = (path.parent / data["chat_template_file"]).read_text()
        except (OSError, TypeError) as err:
            raise InvalidModel(f"{path}: chat_template_file cannot be read: {err}") from None
    stops, context = data.get("stop_token_ids", []), data.get("context", 0)
    if not isinstance(template, str):
        raise InvalidModel(f"{path}: chat_template must be a string")
    if not (isinstance(stops, list) and all(isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in stops)):
        raise InvalidModel(f"{path}: stop_token_ids must be a list of token ids")
    if not (isinstance(context, int) and not isinstance(context, bool) and context >= 0):
        raise InvalidModel(f"{path}: context must be a positive integer")
    return Overrides(template, tuple(stops), context, str(path))
