"""Mitigating the bias: debiased training, CDC (a causal correction at inference), embedding projection."""
