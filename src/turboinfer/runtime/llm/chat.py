"""A chat template rendered the way Hugging Face renders one (Jinja, sandboxed, with `messages`,
`add_generation_prompt` and the special tokens), for models whose file has none or a wrong one; and the refusal
for a model without any."""

from __future__ import annotations

from typing import Any

from turboinfer.core.errors import InvalidInput, InvalidModel


class ChatTemplate:
    """Renders conversations with one Jinja template (called like an engine's `chat`)."""

    def __init__(self, template: str, bos: str = "", eos: str = "") -> None:
        from jinja2 import TemplateError
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        def raise_exception(message: str) -> None:
            raise InvalidInput(f"the chat template refused the conversation: {message}")

        environment = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        environment.globals["raise_exception"] = raise_exception
        try:
            self.template = environment.from_string(template)
        except TemplateError as err:
            raise InvalidModel(f"the chat template does not parse: {err}") from None
        self.bos, self.eos = bos, eos

    def __call__(self, messages: list[dict[str, Any]]) -> str:
        """The conversation as a prompt, ready for the assistant's turn."""
        return str(self.template.render(messages=messages, add_generation_prompt=True, bos_token=self.bos,
                                        eos_token=self.eos))  # fmt: skip


class NoChatTemplate:
    """A model whose file has no chat template: chats are refused with what to do instead."""

    def __init__(self, name: str, fix: str) -> None:
        self.message = f"{name} has no chat template: send a completion (/v1/completions) or add one in {fix}"

    def __call__(self, messages: list[dict[str, Any]]) -> str:
        """InvalidInput, always."""
        raise InvalidInput(self.message)
