"""Models in one place: finding them (hub), causal LMs, text encoders, the embedding store, log-likelihood scoring."""
