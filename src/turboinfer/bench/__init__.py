"""Proof: rigorous, interleaved measurements (decoders today)."""
