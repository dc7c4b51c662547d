"""Simulate the feedback loop of LLM text in a corpus (``sourcebias simulate CONFIG -o DIR``).

Rank, let readers write (a local model or OpenAI-compatible servers) from what they saw, add it to
the corpus as a source of its own, repeat; measure per round and retriever the share of generated
text in the top k, NDCG on the human judgements, silenced human documents and the diversity of the
top k. Related work: Chen et al., *Spiral of Silence: How is Large Language Model Killing
Information Retrieval?* (ACL 2024), whose loop needs an Elasticsearch server.

This package depends on ``data``, ``retrieval``, ``evaluation``, ``generation``, ``mitigation``
(the fair interleaving), ``audit`` (the detector filter) and ``report``; nothing depends on it
but the CLI.
"""

from sourcebias.simulate.config import SimulationConfig, load_simulation_config
from sourcebias.simulate.job import run_simulation
from sourcebias.simulate.result import SimulationResult

__all__ = ["SimulationConfig", "SimulationResult", "load_simulation", "load_simulation_config", "run_simulation"]


def load_simulation(folder):
    """The :class:`SimulationResult` of a simulation folder."""
    return SimulationResult.load(folder)
