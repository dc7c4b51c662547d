"""Before/after evaluations of the mitigations: on data the fit has not seen unless asked for
(and then labelled in-sample), with the seed in every draw, and the table in the library."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest
from conftest import write_jsonl, write_qrels
from lm_helpers import store_sharing_models

import sourcebias as sb
from sourcebias.cli.main import main
from sourcebias.core.errors import ConfigError
from sourcebias.mitigation.before_after import evaluation_target


def test_evaluation_target_never_the_calibration_split_unless_asked(tmp_path):
    data, other = tmp_path / "a", tmp_path / "b"
    assert evaluation_target(data, "train").to_dict() == {"dataset": str(data), "split": "dev", "label": "held-out split", "in_sample": False}
    assert evaluation_target(data, "train", eval_split="test").split == "test"
    t = evaluation_target(data, "test", eval_dataset=other)
    assert (t.dataset, t.split, t.label) == (other, "test", "other dataset")
    for kwargs in ({"split": "dev"}, {"split": "test", "eval_split": "test"}, {"split": "test", "eval_dataset": data / ".", "eval_split": "test"}):
        with pytest.raises(ConfigError, match="--in-sample"):
            evaluation_target(data, **kwargs)
    t = evaluation_target(data, "dev", in_sample=True)
    assert (t.split, t.label, t.in_sample) == ("dev", "in-sample", True)
    with pytest.raises(ConfigError, match="leave out --eval-dataset and --eval-split"):
        evaluation_target(data, "dev", eval_split="test", in_sample=True)


def test_cdc_fit_refuses_to_evaluate_on_its_calibration_data(cocktail_dir, tmp_path, capsys):
    """Before, `cdc fit DATA --split test` evaluated before/after on the sample's own split."""
    out = tmp_path / "cdc"
    with pytest.raises(SystemExit) as info:
        main(["cdc", "fit", str(cocktail_dir), "-r", "bm25", "--split", "dev", "-o", str(out)])
    err = capsys.readouterr().err
    assert info.value.code not in (0, None)
    assert "calibration data" in err and "--in-sample" in err and "--eval-split" in err
    assert not out.exists()


def test_project_fit_refuses_a_copy_of_a_calibration_dataset(cocktail_dir, tmp_path, capsys):
    copy = tmp_path / "copy"
    shutil.copytree(cocktail_dir, copy)
    with pytest.raises(SystemExit) as info:
        main(["project", "fit", str(cocktail_dir), "--target", str(copy), "-o", str(tmp_path / "p")])
    assert info.value.code not in (0, None)
    assert "same human corpus" in capsys.readouterr().err


@pytest.fixture
def eight_pairs(tmp_path):
    human = [
        "cat on the mat",
        "dogs bark at night",
        "river flood valley",
        "fresh bread bakery",
        "solar panels school",
        "museum paintings",
        "bridge over river",
        "rain in the valley",
    ]
    llm = [
        "a cat sits on a mat",
        "at night dogs bark",
        "the valley flooded by the river",
        "bakery with fresh bread",
        "school solar panels",
        "paintings in a museum",
        "a river bridge",
        "valley rain",
    ]
    root = tmp_path / "eight"
    write_jsonl(root / "corpus" / "human.jsonl", [{"_id": f"d{i}", "title": "", "text": t} for i, t in enumerate(human)])
    write_jsonl(root / "corpus" / "llm.jsonl", [{"_id": f"d{i}", "title": "", "text": t} for i, t in enumerate(llm)])
    write_jsonl(root / "queries.jsonl", [{"_id": f"q{i}", "text": t} for i, t in enumerate(human)])
    write_qrels(root / "qrels" / "train.tsv", [(f"q{i}", f"d{i}", 1) for i in range(8)])
    write_qrels(root / "qrels" / "dev.tsv", [(f"q{i}", f"d{i}", 1) for i in range(8)])
    return root


def test_cdc_fit_seed_reaches_the_sample_and_the_evaluation(eight_pairs, tmp_path, capsys):
    """--seed 7: the calibration sample is default_rng(7)'s draw from the sorted pairs (drawn
    here), the evaluation's ties and tests use seed 7, and the evaluation is on dev, labelled
    a held-out split; the table the command prints is the library's, and its Relative Δ is
    (human − LLM) / mean · 100 of its own columns."""
    pytest.importorskip("gguf")
    from sourcebias.mitigation.before_after import before_after_table

    out = tmp_path / "cdc"
    store_sharing_models(tmp_path / "cache")  # SmolLM2 (cdc fit's default LM) converted once a session
    with pytest.raises(SystemExit) as info:
        main(["cdc", "fit", str(eight_pairs), "-r", "bm25", "--sample", "4", "--seed", "7", "-o", str(out), "--cache-dir", str(tmp_path / "cache")])
    printed = capsys.readouterr()
    assert info.value.code in (0, None), printed.err
    pool = sorted((f"q{i}", f"d{i}") for i in range(8))
    pick = np.sort(np.random.default_rng(7).choice(len(pool), size=4, replace=False))
    sample = pd.read_csv(out / "sample.csv")
    assert sorted(set(zip(sample["query_id"], sample["doc_id"]))) == [pool[i] for i in pick]
    fit = json.loads((out / "cdc.json").read_text())
    assert (
        fit["seed"] == 7
        and fit["split"] == "train"
        and fit["details"]["evaluation"] == {"dataset": str(eight_pairs), "split": "dev", "label": "held-out split", "in_sample": False}
    )
    ev = sb.load_result(out / "evaluation")
    assert ev.parameters["seed"] == 7 and ev.dataset["split"] == "dev"
    assert "held-out split" in printed.out
    table = before_after_table(ev, ["bm25", "bm25>>cdc"], "NDCG@3")
    h, g = table["human"].to_numpy(), table["LLM"].to_numpy()
    np.testing.assert_allclose(table["Rel Δ"], (h - g) / ((h + g) / 2) * 100)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["parameters"]["seed"] == 7 and manifest["parameters"]["evaluation"]["label"] == "held-out split"
