"""Proof: interleaved A/B with paired CIs, run history and its regression gate, HTTP load, decoder comparison."""
