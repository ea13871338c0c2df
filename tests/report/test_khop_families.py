"""learning.khop.families: the depth–hop trade-off checked for every block family (GPT-2, Llama,
GPT-NeoX) at equal width — PASS on measured tables, FAIL when any one family's table contradicts
the three statements; its series, headline, figure and the experiments behind it."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from headcount.learn import experiments  # noqa: E402
from headcount.learn.experiments import GPT2_BLOCK, experiment_spec  # noqa: E402
from headcount.report.claims import FAIL, PASS, Context  # noqa: E402
from headcount.report.figures import FIGURES  # noqa: E402
from headcount.report.headlines import headline  # noqa: E402
from headcount.report.learning import claims as learning  # noqa: E402
from headcount.report.learning import khop  # noqa: E402
from headcount.report.reproduce import load_claims, run_claim  # noqa: E402

# the quick sweeps' measured tables, error by L × k = 1..4 (1000 steps, seed 0, rounded; the
# reproduce run of 2026-12-03)
MEASURED = {
    "khop-gpt2": {
        2: [0.0009, 0.2924, 0.5064, 0.6882],
        3: [0.0002, 0.1691, 0.3949, 0.5569],
        4: [0.0006, 0.0231, 0.3455, 0.4273],
        5: [0.0001, 0.0007, 0.0012, 0.0801],
    },
    "khop-llama": {
        2: [0.0007, 0.1625, 0.4957, 0.6389],
        3: [0.0001, 0.0113, 0.2784, 0.4426],
        4: [0.0, 0.0003, 0.0032, 0.207],
        5: [0.0, 0.0006, 0.0026, 0.0323],
    },
    "khop-neox": {
        2: [0.0019, 0.4781, 0.5026, 0.8012],
        3: [0.0002, 0.2429, 0.4784, 0.7139],
        4: [0.0001, 0.0336, 0.3792, 0.4572],
        5: [0.0001, 0.0022, 0.2881, 0.473],
    },
}


def rows(errors: dict[int, list[float]], certified: set[tuple[int, int]]) -> list[dict[str, Any]]:
    """One fake run per depth, certified at fixed:8 on the (L, k) cells named, else a float64
    error."""
    return [
        {
            "config": {"layers": L},
            "metrics": {
                "accuracy_by_hop": {str(k + 1): 1 - e for k, e in enumerate(row)},
                "certificates_by_hop": {
                    str(k): {
                        "errors": 0,
                        "precision_bits": 8,
                        "certified": True,
                        "dtypes_exact": ["float64"],
                    }
                    if (L, k) in certified
                    else {
                        "errors": 2,
                        "precision_bits": None,
                        "certified": False,
                        "dtypes_exact": None,
                    }
                    for k in range(1, len(row) + 1)
                },
            },
        }
        for L, row in errors.items()
    ]


def context(tmp_path, tables: dict[str, dict[int, list[float]]]) -> Context:
    """A Context whose cached summary of each family's experiment is the real summarize_khop of
    fake rows with these error tables."""
    ctx = Context(scale="quick", results_db=str(tmp_path / "results.sqlite"))
    for name, errors in tables.items():
        summary = experiments.EXPERIMENTS[name].summarize(rows(errors, {(5, 1)}))
        ctx.cache[("experiment", name, "quick", ctx.results_db)] = summary
    return ctx


def run(claim_id: str, ctx: Context):
    registered = load_claims()[claim_id]
    claim = SimpleNamespace(function=registered.function, params_for=lambda scale: {})
    return run_claim(claim, ctx)


def test_measured_tables_pass_with_depths_side_by_side(tmp_path):
    r = run("learning.khop.families", context(tmp_path, MEASURED))
    assert r.status == PASS, r.detail
    assert list(r.measured) == ["GPT-2", "Llama", "GPT-NeoX"]
    assert [r.measured[f]["min_depth"] for f in r.measured] == [
        [2, 4, 5, None],
        [2, 3, 4, 5],
        [2, 4, None, None],
    ]
    assert r.measured["Llama"]["steps"] == 1000
    assert (
        "smallest depth with error ≤ 5% by k (GPT-2/Llama/GPT-NeoX): k=1: 2/2/2, k=2: 4/3/4, "
        "k=3: 5/4/none, k=4: none/5/none" in r.detail
    )
    # precision reported per family: only (L = 5, k = 1) certified
    assert "Llama: certified fixed:p by L × k=[1, 2, 3, 4]" in r.detail
    assert "L=5: 8 — — —" in r.detail
    line = headline("learning.khop.families", r.status, r.measured, r.detail)
    assert line == "smallest depth at k = 4: GPT-2 none, Llama L = 5, GPT-NeoX none"


@pytest.mark.parametrize("family", ["khop-gpt2", "khop-llama", "khop-neox"])
@pytest.mark.parametrize(
    "change, reason",
    [
        ({5: [0.0, 0.0, 0.0, 0.9]}, "is not better than the shallowest"),  # depth buys nothing
        ({3: [0.3, 0.3, 0.3, 0.3]}, "L=3: error at k=4 (0.3000) is not above error at k=1"),
        ({2: [0.0, 0.3, 0.01, 0.7]}, "not growing with k"),  # L = 2 solves k = 3, not k = 2
    ],
)
def test_one_family_contradicting_fails_the_claim(tmp_path, family, change, reason):
    tables = dict(MEASURED) | {family: MEASURED[family] | change}
    r = run("learning.khop.families", context(tmp_path, tables))
    assert r.status == FAIL
    # the reason stands in the changed family's part of the detail, and only there
    names = [n for _, n, _ in khop.FAMILIES]
    starts = [r.detail.index(f"{n}: ") for n in names] + [r.detail.index("GPT-2: certified")]
    i = [e for e, _, _ in khop.FAMILIES].index(family)
    assert r.detail.count(reason) == 1 and starts[i] < r.detail.index(reason) < starts[i + 1]
    assert "by k (GPT-2/Llama/GPT-NeoX)" not in r.detail  # no comparison of a failed table


def test_too_few_depths_fails(tmp_path):
    tables = dict(MEASURED) | {"khop-neox": {2: MEASURED["khop-neox"][2]}}
    r = run("learning.khop.families", context(tmp_path, tables))
    assert r.status == FAIL and "GPT-NeoX: need ≥ 2 depths" in r.detail


def test_experiments_differ_from_gpt2_only_in_the_block():
    gpt2 = experiment_spec("khop-gpt2")["fixed"]
    shared = {k: v for k, v in gpt2.items() if k not in GPT2_BLOCK}
    for name, arch in [("khop-llama", "llama"), ("khop-neox", "neox")]:
        for scale in ("quick", "full"):
            spec = experiment_spec(name, scale)
            other = experiment_spec("khop-gpt2", scale)
            assert spec["grid"] == other["grid"] == {"layers": [2, 3, 4, 5]}
            assert spec["fixed"]["arch"] == arch
            assert spec["sweep"]["runner"] == other["sweep"]["runner"]
            base = {k: v for k, v in other["fixed"].items() if k not in GPT2_BLOCK}
            assert {k: v for k, v in spec["fixed"].items() if k != "arch"} == base
        assert {k: v for k, v in experiment_spec(name)["fixed"].items() if k != "arch"} == shared


def test_registered_with_figure_and_drawings(tmp_path):
    assert load_claims()["learning.khop.families"].module == "headcount.report.learning.khop"
    assert FIGURES["learning_khop_families"].claim == "learning.khop.families"
    assert {"khop-llama", "khop-neox"} <= set(learning.DRAW)
    r = run("learning.khop.families", context(tmp_path, MEASURED))
    fig = plt.figure()
    caption = khop.draw_families(fig, r.series)
    heat_maps = [ax for ax in fig.axes if ax.texts]
    assert [ax.get_title() for ax in heat_maps] == [
        "GPT-2 blocks",
        "Llama blocks",
        "GPT-NeoX blocks",
    ]
    llama = [t.get_text() for t in heat_maps[1].texts]  # by L, then k
    assert llama[0] == "0.1\n—" and llama[12] == "0.0\np=8"  # (L, k) = (2, 1), (5, 1)
    assert "training steps: GPT-2 1000, Llama 1000, GPT-NeoX 1000" in caption
    plt.close(fig)
    fig = plt.figure()
    caption = learning.DRAW["khop-llama"](fig, r.series.summaries[1])
    assert "Llama-style" in fig.axes[0].get_title() and "RMSNorm" in caption
    plt.close(fig)
