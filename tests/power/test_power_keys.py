"""Keys of earlier releases keep working for one release, with a warning naming the new key;
an unknown key is refused with every accepted key."""

from __future__ import annotations

import json

import pytest

from sourcebias.cli.main import main
from sourcebias.core.errors import ConfigError
from sourcebias.power import statistic_name

#: the keys the first release of `sourcebias power` accepted (git show 95a030a: ALIASES of power/pilot.py)
FIRST_RELEASE = {
    "rel_delta": "relative_delta_ci",
    "reldelta": "relative_delta_ci",
    "rd": "relative_delta_ci",
    "relative_delta": "relative_delta_ci",
    "ndcg": "paired_tests",
    "difference": "paired_tests",
    "diff": "paired_tests",
    "ndcg_diff": "paired_tests",
    "ndcg_difference": "paired_tests",
    "twin": "twin_preference",
    "twin_pref": "twin_preference",
    "pairs": "twin_preference",
    "twin_preference": "twin_preference",
    "ndsr": "delta_ndsr",
    "dndsr": "delta_ndsr",
    "delta_ndsr": "delta_ndsr",
}


@pytest.mark.filterwarnings("ignore::FutureWarning")
@pytest.mark.parametrize(("key", "statistic"), sorted(FIRST_RELEASE.items()))
def test_every_key_of_the_first_release_still_means_its_statistic(key, statistic):
    assert statistic_name(key) == statistic
    assert statistic_name(key.replace("_", "-").upper()) == statistic


def test_a_renamed_key_warns_with_the_new_one():
    with pytest.warns(FutureWarning, match=r"'ndcg' is the spelling of earlier releases.*write 'difference' \(paired_tests\)"):
        assert statistic_name("ndcg") == "paired_tests"
    with pytest.warns(FutureWarning, match=r"write 'rel_delta' \(relative_delta_ci\)"):
        statistic_name("rd")


def test_an_unknown_key_is_refused_with_every_accepted_key():
    with pytest.raises(ConfigError) as info:
        statistic_name("ndgc")
    message = str(info.value)
    assert message.startswith("unknown statistic 'ndgc'; accepted")
    for key in ("difference", "rel_delta", "relative_delta", "twin", "twin_pref", "ndsr", "paired_tests", "relative_delta_ci", "twin_preference", "delta_ndsr"):
        assert key in message.replace(",", " ").replace(";", " ").replace(":", " ").split(), key
    with pytest.raises(ConfigError, match=r"'means' .* has no power analysis; accepted .*difference"):
        statistic_name("means")


def run_cli(args, capsys):
    with pytest.raises(SystemExit) as info:
        main(args)
    out = capsys.readouterr()
    return info.value.code, out.out, out.err


def test_power_effect_with_the_old_key_runs_as_with_the_new_one(cocktail_dir, tmp_path, capsys):
    code, _, err = run_cli(["evaluate", str(cocktail_dir), "-r", "bm25", "--k", "1", "-o", str(tmp_path / "pilot")], capsys)
    assert code in (0, None), err
    args = ["power", str(tmp_path / "pilot"), "--n", "20", "--resamples", "100", "--statistic", "difference"]
    code, _, old_err = run_cli([*args, "--effect", "ndcg=0.1", "-o", str(tmp_path / "old")], capsys)
    assert code in (0, None), old_err
    assert "Warning: 'ndcg' is the spelling of earlier releases and will be refused in the next one; write 'difference'" in " ".join(old_err.split())
    code, _, err = run_cli([*args, "--effect", "difference=0.1", "-o", str(tmp_path / "new")], capsys)
    assert code in (0, None) and "Warning" not in err
    old, new = (json.loads((tmp_path / d / "power.json").read_text()) for d in ("old", "new"))
    assert old["rows"] == new["rows"] and any(r["effect"] == 0.1 and r["effect_source"] == "given" for r in new["rows"])
    code, _, err = run_cli([*args, "--effect", "ndgc=0.1"], capsys)
    assert code == 2 and "difference" in err and "rel_delta" in err
