"""Experiment grids: configurations, resumable runs of every cell, in-process or on Ray."""
