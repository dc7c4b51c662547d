"""Names of the systems ``evaluate`` builds: a label wins, else the retriever's own name (its
``name=`` and backend precision, as ``test_fast_backends`` checks on ONNX), never a server's address."""

from __future__ import annotations

import pytest

from sourcebias.core.errors import ConfigError
from sourcebias.evaluation.plan import EvaluationPlan
from sourcebias.retrieval.registry import short_name


def test_a_label_names_the_system_and_a_plain_spec_keeps_its_own_name():
    systems = EvaluationPlan(retrievers=("bm25", "lex=tfidf")).build_systems()
    assert [s.name for s in systems] == ["bm25", "lex"]


def test_two_systems_of_one_name_are_refused_before_any_model_loads():
    with pytest.raises(ConfigError, match="two retrievers are named 'a'"):
        EvaluationPlan(retrievers=("a=bm25", "a=tfidf")).build_systems()


def test_a_servers_address_is_not_part_of_a_name():
    spec = "bm25>>rankgpt:openai:qwen@http://127.0.0.1:8088/v1@http://10.0.0.2:8000/v1,depth=10"
    assert short_name(spec) == "bm25>>rankgpt:openai:qwen,depth=10"
