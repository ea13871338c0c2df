"""Head scores (induction/heads.py, `headcount analyze heads`): exact values on hand-made patterns,
the find^r powers against the task's own hop answers, the two-layer construction's roles recovered,
refusals."""

from __future__ import annotations

import json

import numpy as np
import pytest

from headcount.common.errors import InputError
from headcount.core.model.files import save_model
from headcount.induction import task
from headcount.induction.construction import build_construction
from headcount.induction.heads import ROLE_THRESHOLD, analyze_heads, find_powers, score_heads
from tests.cli_run import refused, run


def test_find_powers_are_the_hop_answers_positions():
    sigma = task.uniform(np.random.default_rng(1), 200, 12, 3)
    for r, f in find_powers(sigma).items():
        assert r in (1, 2, 4, 8)
        target = task.induction_targets(sigma, r)
        rows, cols = np.nonzero(f >= 0)
        assert np.array_equal(sigma[rows, f[rows, cols]], target[rows, cols])
        assert np.array_equal(f < 0, target < 0)


def test_scores_on_hand_made_patterns():
    sigma = np.array([[0, 1, 2, 0, 1]])  # find = [-1, -1, -1, 1, 2]
    n = 5

    def pattern(keys):
        A = np.zeros((1, 1, n, n))
        A[0, 0, np.arange(n), keys] = 1
        return A

    (p,) = score_heads([pattern([0, 0, 1, 2, 3])], sigma)  # previous token
    assert (p.previous_token, p.induction, p.duplicate_token, p.sink, p.role) == (
        1,
        0,
        0,
        0.25,
        "previous_token",
    )
    (i,) = score_heads(
        [pattern([0, 0, 0, 1, 2])], sigma
    )  # induction; no answer: the first position
    assert (i.previous_token, i.induction, i.duplicate_token, i.sink, i.role) == (
        0.25,
        1,
        0,
        0.5,
        "induction",
    )
    assert i.find[1] == pytest.approx(2 / np.sqrt(10))  # ⟨A, F⟩ = 2, ‖A‖ = √5, ‖F‖ = √2
    (d,) = score_heads(
        [pattern([0, 1, 2, 0, 1])], sigma
    )  # the earlier occurrence of the same token
    assert (d.duplicate_token, d.previous_token, d.induction, d.role) == (
        1,
        0,
        0,
        "duplicate_token",
    )
    assert d.latest_earlier == 0  # no query has two earlier occurrences: no choice to score
    uniform = (np.tril(np.ones((n, n))) / np.arange(1, n + 1)[:, None])[
        None, None
    ]  # causal average
    (u,) = score_heads([uniform], sigma)
    assert max(u.previous_token, u.induction, u.duplicate_token, u.sink) < ROLE_THRESHOLD
    assert (u.uniform, u.role) == (1.0, "uniform")
    assert p.uniform == pytest.approx(
        np.mean([1 / 2, 1 / 3, 1 / 4, 1 / 5])
    )  # one key: overlap 1/(i+1)
    blank = np.zeros(
        (1, 1, n, n)
    )  # attends nowhere (a row sum of 0): no mechanism reaches the threshold
    assert score_heads([blank], sigma)[0].role == "none"


def test_latest_earlier_tells_a_pointer_from_a_spread():
    sigma = np.array([[0, 1, 0, 1, 0, 1]])  # find = [-1, -1, 1, 2, 3, 4]: latest earlier i − 2
    pointer = np.zeros((1, 1, 6, 6))
    pointer[0, 0, np.arange(6), [0, 0, 0, 1, 2, 3]] = 1  # the latest strictly earlier occurrence
    spread = np.zeros((1, 1, 6, 6))
    spread[0, 0, [0, 1, 2, 3], [0, 0, 0, 1]] = 1
    spread[0, 0, 4, [0, 2]] = spread[0, 0, 5, [1, 3]] = 0.5  # every earlier occurrence evenly
    (a,) = score_heads([pointer], sigma)
    (b,) = score_heads([spread], sigma)
    assert a.duplicate_token == b.duplicate_token == 1 and a.latest_earlier == 1
    assert b.latest_earlier == 0.5  # rows 4 and 5 (two earlier occurrences) put half on the latest
    assert a.role == b.role == "duplicate_token"  # a score, not a role: the roles are unchanged
    assert a.to_json()["latest_earlier"] == 1


@pytest.mark.parametrize("n, alphabet", [(8, 3), (16, 4), (32, 8)])
def test_the_two_layer_construction_heads_have_their_built_roles(n, alphabet):
    result = analyze_heads(build_construction(2, n, alphabet), n=n, alphabet=alphabet, samples=64)
    roles = [(h.layer, h.head, h.role) for h in result.heads]
    assert roles == [(0, 0, "previous_token"), (0, 1, "duplicate_token"), (1, 0, "induction")]
    prev, _, ind = result.heads
    assert prev.previous_token > 0.999 and ind.induction > 0.999


@pytest.mark.parametrize("n, alphabet", [(6, 3), (16, 4)])
def test_the_one_layer_construction_head_averages_evenly(n, alphabet):
    """The one-layer construction is a table model whose one head attends evenly to every position
    (its readout decodes all earlier tokens from the average): analyze heads reads the table and
    says so."""
    (head,) = analyze_heads(
        build_construction(1, n, alphabet), n=n, alphabet=alphabet, samples=32
    ).heads
    assert (head.layer, head.head, head.role) == (0, 0, "uniform")
    assert head.uniform == pytest.approx(1.0, abs=1e-12)


def test_cli_json_and_refusals(capsys, tmp_path):
    path = tmp_path / "two.safetensors"
    save_model(build_construction(2, 12, 3), path)
    code, out, err = run(
        capsys,
        "analyze",
        "heads",
        "--model",
        str(path),
        "--n",
        "12",
        "--alphabet",
        "3",
        "--samples",
        "32",
        "--json",
    )
    assert code == 0, err
    got = json.loads(out)
    assert (got["task"], got["layout"], got["n"], got["samples"], got["role_threshold"]) == (
        "induction", "plain", 12, 32, ROLE_THRESHOLD)  # fmt: skip
    assert [h["role"] for h in got["heads"]] == ["previous_token", "duplicate_token", "induction"]
    assert set(got["heads"][0]["find"]) == {"1", "2", "4", "8"}
    one = tmp_path / "one.safetensors"
    save_model(build_construction(1, 6, 3), one)
    code, out, err = run(
        capsys, "analyze", "heads", "--model", str(one), "--n", "6", "--alphabet", "3", "--json"
    )
    assert code == 0, err
    assert [(h["role"], h["uniform"]) for h in json.loads(out)["heads"]] == [("uniform", 1.0)]
    refused(
        capsys, "analyze", "heads", "--model", str(path), "--n", "1", needles=("--n must be ≥ 2",)
    )
    refused(capsys, "analyze", "heads", "--model", str(path), "--n", "12", "--task", "hop",
            needles=("--task",))  # fmt: skip
    refused(capsys, "analyze", "heads", "--model", str(path), "--n", "40", needles=("context",))
    refused(
        capsys,
        "analyze",
        "heads",
        "--model",
        str(tmp_path / "missing.safetensors"),
        needles=("missing",),
    )
    with pytest.raises(InputError, match="attention weights held"):
        analyze_heads(build_construction(2, 1024, 4), n=1024, alphabet=4, samples=65536)
