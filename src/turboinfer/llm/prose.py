"""Token windows of real prose (the standard library's docstrings) for a generator's speed and fidelity runs."""

from __future__ import annotations

from turboinfer.core.errors import InvalidInput
from turboinfer.measure.sentences import real_sentences
from turboinfer.runtime.llm.generate import Generator


class Prose:
    """Distinct token windows of real prose for one generator."""

    def __init__(self, generator: Generator) -> None:
        self.tokens = generator.tokenize(" ".join(real_sentences(1100)))
        self._next = 0

    def window(self, length: int) -> tuple[int, ...]:
        """The next `length` tokens (wrapping around), never the same window twice in a row."""
        if length > len(self.tokens):
            raise InvalidInput(f"a {length}-token prompt is longer than the {len(self.tokens)} tokens of prose")
        start = self._next % (len(self.tokens) - length + 1)
        self._next = start + length + 7
        return tuple(self.tokens[start : start + length])
