"""The exact accuracy frontier (boolean/accuracy_frontier.py, `headcount boolean frontier`; issue
17, point 3).

Rows against an exhaustive search over all 2^(n+1) ±1 patterns for every n ≤ 12 (value and the
lexicographically first optimal pattern); the Theorem-3 model built for the best pattern reaching
the frontier exactly for every (D, H) with D·H < T at n = 12 (xor, majority, mod:3); the CLI's JSON,
refusals and --out round trip.
"""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest
from flint import fmpq

from headcount.boolean import accuracy_frontier as bf
from headcount.boolean.certification import check_model
from headcount.boolean.model import model_sign_exact
from headcount.boolean.model_file import load_boolean
from headcount.boolean.task import parse_function, sign_changes
from headcount.cli import boolean as cli_boolean
from headcount.common.errors import InputError
from headcount.common.resources import memory_limit_of
from tests.cli_run import refused, run


def exhaustive(F: tuple[int, ...]) -> list[tuple[int, str]]:
    """(most inputs right, first optimal pattern in '+' < '-' order) for c = 0..T, over every ±1
    pattern: pattern i has bit n − t of i set where s_t = −1, so i's order is the patterns'
    lexicographic order."""
    n = len(F) - 1
    i = np.arange(2 ** (n + 1))
    minus = (i[:, None] >> (n - np.arange(n + 1))[None, :]) & 1  # [patterns n+1]: 1 where '-'
    changes = (minus[:, 1:] != minus[:, :-1]).sum(axis=1)
    right = minus == (np.array(F) < 0)[None, :]
    agree = right.astype(np.int64) @ np.array(
        [math.comb(n, t) for t in range(n + 1)], dtype=np.int64
    )
    out = []
    for c in range(sign_changes(F) + 1):
        allowed = changes <= c
        best = int(agree[allowed].max())
        first = int(np.flatnonzero(allowed & (agree == best))[0])
        out.append((best, "".join("-" if b else "+" for b in minus[first])))
    return out


def random_tables(n: int, count: int, seed: int) -> list[tuple[int, ...]]:
    rng = random.Random(seed * 1000 + n)
    return [tuple(rng.choice((1, -1)) for _ in range(n + 1)) for _ in range(count)]


def functions_at(n: int) -> list[tuple[int, ...]]:
    named = [parse_function(name, n) for name in ("xor", "majority", "mod:3", "or")]
    return named + random_tables(n, 2, seed=17)


@pytest.mark.parametrize("n", range(1, 13))
def test_rows_equal_exhaustive_search(n):
    for F in functions_at(n):
        rows = bf.frontier_rows(F)
        assert [r.sign_changes for r in rows] == list(range(sign_changes(F) + 1))
        assert [(r.agree, bf.pattern_string(r.pattern)) for r in rows] == exhaustive(F), F
        for r in rows:
            assert (
                sign_changes(r.pattern) <= r.sign_changes and bf.agreement(r.pattern, F) == r.agree
            )
            assert r.accuracy == fmpq(r.agree, 2**n) and r.accuracy_float == r.agree / 2**n
        assert rows[-1].accuracy == 1 and rows[-1].pattern == F  # at c = T: F itself
        assert all(a.agree <= b.agree for a, b in zip(rows, rows[1:]))


def test_xor_12_rows_by_hand():
    """n = 12 XOR, weights C(12, t): with c changes the best drops the lightest runs at the ends;
    ties (c = 0: all '+' and all '-' both get half) go to '+'."""
    rows = bf.frontier_rows(parse_function("xor", 12))
    assert [str(r.accuracy) for r in rows] == [
        "1/2",
        "1255/2048",
        "743/1024",
        "1651/2048",
        "227/256",
        "3797/4096",
        "1981/2048",
        "4017/4096",
        "509/512",
        "4083/4096",
        "2047/2048",
        "4095/4096",
        "1",
    ]
    assert bf.pattern_string(rows[0].pattern) == "+" * 13
    assert bf.pattern_string(rows[11].pattern) == "+-+-+-+-+-+--"  # wrong only on t = 12: 1 of 4096
    # c = 1: "+++++++------" is right on the even t ≤ 6 and the odd t ≥ 7
    assert rows[1].agree == sum(math.comb(12, t) for t in (0, 2, 4, 6, 7, 9, 11))


def test_frontier_row_max_changes_and_runs():
    F = parse_function("mod:3", 12)
    rows = bf.frontier_rows(F)
    assert bf.frontier_rows(F, 3) == rows[:4] and bf.frontier_rows(F, 100) == rows
    assert bf.frontier_rows(F, 0) == rows[:1] and bf.pattern_string(rows[0].pattern) == "-" * 13
    assert bf.frontier_row(F, 5) == rows[5]
    assert bf.frontier_row(F, 50).pattern == F and bf.frontier_row(F, 50).accuracy == 1
    assert bf.runs((1, 1, -1, 1)) == [(1, 0, 1), (-1, 2, 2), (1, 3, 3)]
    assert bf.run_weights(parse_function("xor", 4)) == [1, 4, 6, 4, 1]
    assert sum(bf.run_weights(F)) == 2**12
    with pytest.raises(InputError, match="max_changes"):
        bf.frontier_rows(F, -1)
    with pytest.raises(InputError, match="signs need"):
        bf.agreement((1, 1), F)


# ------------------------------------------------------------------------------------------------
# models
def pairs_below(T: int) -> list[tuple[int, int]]:
    return [(D, H) for D in range(1, T) for H in range(1, T) if D * H < T]


def check_models(name: str, pairs: list[tuple[int, int]], n: int = 12) -> int:
    F = parse_function(name, n)
    rows = bf.frontier_rows(F)
    for D, H in pairs:
        model, built = bf.build_frontier_model(F, rows[D * H], D, H)
        signs = model_sign_exact(built.layer, built.readout, n)
        assert tuple(signs) == rows[D * H].pattern, (
            name,
            D,
            H,
        )  # the model computes the pattern exactly
        assert model.certified and model.model_accuracy == rows[D * H].accuracy, (name, D, H)
        assert model.model_accuracy == fmpq(bf.agreement(signs, F), 2**n)
    return len(pairs)


@pytest.mark.parametrize("name", ["xor", "majority", "mod:3"])
def test_constructed_models_reach_the_frontier_every_pair_below(name):
    """Every (D, H) with D·H < T at n = 12 (about 0.1 s in all: no need for the slow set)."""
    T = sign_changes(parse_function(name, 12))
    assert (
        check_models(name, pairs_below(T)) == {12: 29, 1: 0, 8: 16}[T]
    )  # majority: T = 1, none below


def test_constant_pattern_is_built_honestly():
    """c = 0 (and any constant F, T = 0): Theorem 3's factorization route with no roots is the
    constant readout g = c·z_1 on z_1 = 1/Q_0 > 0, so the model is constant and gets F's larger
    half."""
    F = parse_function("majority", 5)
    row = bf.frontier_rows(F)[0]
    model, built = bf.build_frontier_model(F, row, 1, 1)
    assert set(model_sign_exact(built.layer, built.readout, 5)) == {1} and model.certified
    assert model.model_accuracy == fmpq(1, 2)
    for text in ("F:+++", "F:---"):
        result = bf.accuracy_frontier(text, 2, 2, 3)
        assert (
            result.threshold_degree == 0
            and result.model.certified
            and result.model.model_accuracy == 1
        )
        assert result.to_json()["rows"] == [
            {
                "sign_changes": 0,
                "best_accuracy": "1",
                "best_accuracy_float": 1.0,
                "pattern": text[2:],
            }
        ]
        assert result.model.pattern == text[2:] and result.model.route == "factorization"


def test_accuracy_frontier_checks_before_work(tmp_path):
    with pytest.raises(InputError, match="^give degree and heads together") as err:
        bf.accuracy_frontier("xor", 6, degree=2)
    assert err.value.params == ("degree", "heads")
    with pytest.raises(InputError, match="^out saves") as err:
        bf.accuracy_frontier("xor", 6, out=tmp_path / "m.safetensors")
    assert err.value.param == "out"
    with pytest.raises(InputError, match="degree must be ≥ 1"):
        bf.accuracy_frontier("xor", 6, 0, 3)
    with pytest.raises(InputError, match="^out ") as err:
        bf.accuracy_frontier("xor", 6, 1, 3, out=tmp_path / "missing" / "m.safetensors")
    assert err.value.param == "out"
    with pytest.raises(InputError, match="word operations"):
        bf.accuracy_frontier("xor", 3000)  # 2·3001² cells of 3000-bit integers: 1.2·10⁹ units
    with pytest.raises(InputError, match="word operations"):
        bf.accuracy_frontier("majority", 300_000)  # the binomial weights: 1.4·10⁹ units
    with memory_limit_of("16M"), pytest.raises(InputError, match="max_memory"):
        bf.accuracy_frontier("xor", 2000)  # the decisions and the rows' patterns: ~20 MB
    with pytest.raises(InputError, match="word operations of exact arithmetic"):
        bf.accuracy_frontier("xor", 8, 1, 1000)  # the model: construct's exact budget
    assert bf.accuracy_frontier([1, -1, 1], 2).function == "F:+-+"
    with pytest.raises(InputError, match="n \\+ 1 = 3"):
        bf.accuracy_frontier([1, -1], 2)


def test_frontier_cost_formula():
    work, memory = bf.frontier_cost(12, 12, 12)
    assert 0 < work < 1e5 and 0 < memory < 1e5
    assert (
        bf.frontier_cost(2000, 2000, 2000)[0]
        < bf.FRONTIER_WORK_LIMIT
        < bf.frontier_cost(3000, 3000, 3000)[0]
    )
    assert bf.frontier_cost(10**400, 10**400, 10**400)[0] > 1e300  # no OverflowError


# ------------------------------------------------------------------------------------------------
# CLI
def test_cli_json_rows_and_model(capsys):
    code, out, _ = run(capsys, "boolean", "frontier", "--function", "xor", "--n", "12", "--json")
    assert code == 0
    result = json.loads(out)
    assert list(result) == ["function", "n", "threshold_degree", "rows"]
    assert (result["function"], result["n"], result["threshold_degree"]) == ("xor", 12, 12)
    assert result["rows"][5] == {
        "sign_changes": 5,
        "best_accuracy": "3797/4096",
        "best_accuracy_float": 3797 / 4096,
        "pattern": "+++++-+-+----",
    }
    argv = (
        "boolean",
        "frontier",
        "--function",
        "xor",
        "--n",
        "12",
        "--degree",
        "2",
        "--heads",
        "3",
        "--json",
    )
    code, out, _ = run(capsys, *argv)
    result = json.loads(out)
    assert list(result)[4:] == [
        "degree",
        "heads",
        "sign_changes",
        "pattern",
        "best_accuracy",
        "best_accuracy_float",
        "model_accuracy",
        "model_accuracy_float",
        "certified",
        "route",
        "dim",
    ]
    assert (result["degree"], result["heads"], result["sign_changes"]) == (2, 3, 6)
    assert (
        result["best_accuracy"] == result["model_accuracy"] == "1981/2048"
        and result["certified"] is True
    )
    assert result["pattern"] == result["rows"][6]["pattern"] == "----+-+-+----"
    # D·H ≥ T: the frontier is 1, and the model is Theorem 3's for F itself
    code, out, _ = run(capsys, *argv[:6], "--degree", "4", "--heads", "4", "--json")
    result = json.loads(out)
    assert (result["sign_changes"], result["best_accuracy"], result["certified"]) == (12, "1", True)


def test_cli_human_table(capsys):
    code, out, _ = run(
        capsys,
        "boolean",
        "frontier",
        "--function",
        "mod:3",
        "--n",
        "5",
        "--degree",
        "1",
        "--heads",
        "2",
    )
    lines = out.strip().splitlines()
    assert code == 0 and lines[0] == "mod:3 on 5 bits, threshold degree 3"
    assert lines[2].split() == ["0", "0.6562500000", "21/32", "------"]
    assert lines[4].split() == ["2", "0.9687500000", "31/32", "---+--"]
    assert (
        lines[-1].startswith("D=1, H=2: frontier at c = 2 is 0.9687500000")
        and "certified" in lines[-1]
    )
    code, out, _ = run(capsys, "boolean", "frontier", "--function", "majority", "--n", "100")
    assert "(101 signs: --json)" in out


@pytest.mark.parametrize(
    "args, needle",
    [
        (("--function", "xor", "--n", "6", "--degree", "2"), "--degree and --heads together"),
        (("--function", "xor", "--n", "6", "--heads", "2"), "--degree and --heads together"),
        (("--function", "xor", "--n", "6", "--degree", "0", "--heads", "2"), "degree must be ≥ 1"),
        (("--function", "xor", "--n", "6", "--degree", "2", "--heads", "-1"), "heads must be ≥ 1"),
        (("--function", "xor", "--n", "0"), "n must be"),
        (("--function", "xor", "--n", "1000000000"), "1000000"),
        (("--function", "xor", "--n", "100000"), "n=100000 (threshold degree 100000) needs about"),
        (
            ("--function", "xor", "--n", "3000", "--max-memory", "1P"),
            "word operations; allowed up to 1e+09 (lower --n)",
        ),
        (("--function", "parity", "--n", "6"), "unknown function"),
        (("--function", "F:+-", "--n", "6"), "n + 1 = 7"),
        (("--function", "xor", "--n", "6", "--out", "m.safetensors"), "--out saves"),
    ],
)
def test_cli_refusals(capsys, args, needle):
    refused(capsys, "boolean", "frontier", *args, needles=(needle,))


def test_cli_out_round_trip(capsys, tmp_path):
    path = tmp_path / "frontier.safetensors"
    argv = (
        "boolean",
        "frontier",
        "--function",
        "mod:3",
        "--n",
        "12",
        "--degree",
        "1",
        "--heads",
        "3",
    )
    code, out, _ = run(capsys, *argv, "--out", str(path), "--json")
    result = json.loads(out)
    assert code == 0 and result["model_path"] == str(path) and result["certified"] is True
    model = load_boolean(path)
    pattern = result["pattern"]
    assert model.info == {
        "construction": result["route"],
        "function": "F:" + pattern,
        "frontier_of": "mod:3",
        "n": 12,
    }
    assert (model.readout.degree, model.layer.n_heads) == (1, 3)
    # the saved model computes the pattern exactly, so against mod:3 it errs exactly where the
    # pattern does
    assert check_model(path, "F:" + pattern).certified
    F = parse_function("mod:3", 12)
    signs = model_sign_exact(model.layer, model.readout, 12)
    assert (
        str(fmpq(bf.agreement(signs, F), 2**12))
        == result["model_accuracy"]
        == result["best_accuracy"]
    )
    refused(capsys, *argv, "--out", str(tmp_path), needles=("--out",))


def test_cli_help_states_the_bound():
    assert bf.FRONTIER_WORK_LIMIT == 1e9
    assert "10⁹ word operations" in " ".join((cli_boolean.boolean_frontier.__doc__ or "").split())
