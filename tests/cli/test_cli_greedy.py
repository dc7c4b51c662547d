"""Options that take several values after one flag: one table (cli.common.GREEDY) for every command."""

from sourcebias.cli.common import expand_greedy_options


def test_statistics_and_their_measures_take_several_values():
    argv = ["evaluate", "data", "--statistics", "twin_preference", "delta_ndsr", "--statistics-measure", "NDCG@3", "MAP@10", "-o", "out"]
    assert expand_greedy_options(argv) == [
        "evaluate",
        "data",
        "--statistics",
        "twin_preference",
        "--statistics",
        "delta_ndsr",
        "--statistics-measure",
        "NDCG@3",
        "--statistics-measure",
        "MAP@10",
        "-o",
        "out",
    ]


def test_power_sizes_and_effects_take_several_values():
    argv = ["power", "pilot", "--n", "50", "100", "--effect", "rel_delta=10", "twin=0.55", "-o", "out"]
    assert expand_greedy_options(argv) == ["power", "pilot", "--n", "50", "--n", "100", "--effect", "rel_delta=10", "--effect", "twin=0.55", "-o", "out"]


def test_a_comma_list_and_none_are_statistics_values():
    assert expand_greedy_options(["evaluate", "d", "--statistics", "none", "--k", "3"]) == ["evaluate", "d", "--statistics", "none", "--k", "3"]
    out = expand_greedy_options(["evaluate", "d", "--statistics", "paired_tests,twin_preference", "means"])
    assert out == ["evaluate", "d", "--statistics", "paired_tests,twin_preference", "--statistics", "means"]
