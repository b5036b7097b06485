"""Prefix-cache hit rate as vLLM counts it (tokens of a prompt whose leading blocks an earlier prompt already had),
from the server's own books: OpenVINO GenAI reuses the KV blocks of shared prefixes but does not report hits."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

BLOCK_TOKENS = 32
"""KV block size of OpenVINO GenAI's CPU cache: prefixes are shared in whole blocks."""


class PrefixBook:
    """Chained hashes of the full blocks of recent prompts, least recently used dropped past max_tokens (about
    what the engine's cache can hold, so a hit here is a block the engine could still have)."""

    def __init__(self, max_tokens: int, block: int = BLOCK_TOKENS) -> None:
        self.block = block
        self.max_blocks = max(1, max_tokens // block)
        self._blocks: OrderedDict[int, None] = OrderedDict()

    def observe(self, ids: Sequence[int]) -> int:
        """Record a prompt; the number of its leading tokens (whole blocks) that earlier prompts already had."""
        hits, chain, counting = 0, 0, True
        for start in range(0, len(ids) - self.block + 1, self.block):
            chain = hash((chain, tuple(ids[start : start + self.block])))
            if counting and chain in self._blocks:
                hits += self.block
                self._blocks.move_to_end(chain)
                continue
            counting = False
            self._blocks[chain] = None
            if len(self._blocks) > self.max_blocks:
                self._blocks.popitem(last=False)
        return hits
