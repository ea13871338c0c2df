"""Issue 13, point 2 for the boolean commands: every size has a documented bound checked before any
work, and a refusal is exit 2 with one line naming the bound and the option (never a hang or a
memory blow-up). Also the postage-stamp search answers `--degree 3 --size 8` in about a second (it
ran > 45 s)."""

from __future__ import annotations

import re
import time

import pytest

from headcount.boolean import certification as certify
from headcount.boolean import search, threshold
from headcount.boolean import task as functions
from headcount.boolean.certification import (
    EXACT_WORK_LIMIT,
    check_model,
    construct_and_certify,
    exact_cost,
)
from headcount.boolean.search import MAX_BASIS_SPAN, stamps, stamps_max_size
from headcount.cli import boolean as cli_boolean
from headcount.common.errors import InputError
from headcount.common.resources import memory_limit_of
from tests.cli_run import refused, run

BIG = ["1000000000", "1000000000000", str(2**63), str(2**64), "1" + "0" * 100]


# ------------------------------------------------------------------ construct / threshold-degree /
# check


@pytest.mark.parametrize("n", BIG)
def test_construct_and_threshold_degree_refuse_huge_n(capsys, n):
    refused(
        capsys,
        "boolean",
        "construct",
        "--function",
        "xor",
        "--n",
        n,
        "--degree",
        "1",
        "--heads",
        "1",
        needles=("1000000", "--n"),
    )
    refused(
        capsys, "boolean", "threshold-degree", "--function", "majority", "--n", n, needles=("--n",)
    )


@pytest.mark.parametrize(
    ("degree", "heads", "needle"),
    [
        (
            "1",
            "1000",
            "word operations of exact arithmetic",
        ),  # 2·10¹⁰ units: the rational form, ~50 s
        ("1000000000", "8", "--max-memory"),  # the polynomial N alone: ~10²⁰ EiB
        ("1", "1000000000", "--max-memory"),
        ("4000", "8", "word operations"),  # (D·H)² growth: 5·10⁹ units, ~12 s measured
        (str(2**64), str(2**64), "--max-memory"),
        ("1" + "0" * 100, "1", "--max-memory"),
    ],
)
def test_construct_refuses_beyond_the_exact_budget(capsys, degree, heads, needle):
    err = refused(
        capsys,
        "boolean",
        "construct",
        "--function",
        "majority",
        "--n",
        "8",
        "--degree",
        degree,
        "--heads",
        heads,
        *(("--max-memory", "1P") if needle != "--max-memory" else ()),
        needles=(needle,),
    )
    assert "--degree" in err or "--max-memory" in err


def test_exact_cost_formula_and_the_limit():
    work, memory = exact_cost(8, 2, 4, 2)
    assert 0 < work < 1e6 and 0 < memory < 1e6  # the golden run: instant
    assert (
        exact_cost(1_000_000, 1, 1, 1)[0] < EXACT_WORK_LIMIT
    )  # n = 10⁶ at D = H = 1 answers (~9 s)
    assert exact_cost(8, 1, 1000, 1)[0] > EXACT_WORK_LIMIT  # 49 s measured: refused
    assert exact_cost(10**400, 10**400, 10**400, 1, 10**400, 10**400)[0] > 1e300  # no OverflowError
    with memory_limit_of("256M"), pytest.raises(InputError, match="max_memory"):
        construct_and_certify(
            "majority", 1_000_000, 1, 1
        )  # the values and lists: ~450 MB estimated
    with pytest.raises(InputError, match="word operations"):
        construct_and_certify("xor", 8, 1, 1000)


def test_construct_out_is_checked_before_any_work(tmp_path):
    for bad in ("", str(tmp_path), str(tmp_path / "missing" / "m.safetensors")):
        with pytest.raises(InputError, match="^out ") as err:
            construct_and_certify("xor", 8, 2, 4, out=bad)
        assert err.value.param == "out"
    assert construct_and_certify("xor", 4, 2, 2, out=tmp_path / "ok.safetensors").certified


def test_check_bounds_n_and_the_models_exact_cost(capsys, tmp_path):
    path = tmp_path / "xor.safetensors"
    construct_and_certify("xor", 8, 1, 8, out=path)
    refused(
        capsys,
        "boolean",
        "check",
        "--model",
        str(path),
        "--function",
        "xor",
        "--n",
        "1000000000",
        needles=("1000000", "--n"),
    )
    err = refused(
        capsys,
        "boolean",
        "check",
        "--model",
        str(path),
        "--function",
        "majority",
        "--n",
        "1000000",
        "--max-memory",
        "1P",
        needles=("word operations", "--n"),
    )
    assert "boolean check at n=1000000" in err
    assert check_model(path, "xor").certified  # normal sizes unchanged


def test_threshold_degree_truth_table_bounds(capsys):
    assert threshold.MAX_N == 11
    refused(
        capsys, "boolean", "threshold-degree", "--truth-table", "01" * 2**11, needles=("n ≤ 11",)
    )
    err = refused(
        capsys, "boolean", "threshold-degree", "--truth-table", "0" * 10**6, needles=("too large",)
    )
    assert "--truth-table" in err and "2048" in err
    with pytest.raises(InputError, match="0..11"):
        threshold.symmetric_truth_table([1] * 31, 30)


def test_threshold_degree_n_must_match_the_truth_table(capsys):
    refused(
        capsys,
        "boolean",
        "threshold-degree",
        "--truth-table",
        "0110",
        "--n",
        "5",
        needles=("--n 5",),
    )
    code, out, _ = run(
        capsys, "boolean", "threshold-degree", "--truth-table", "0110", "--n", "2", "--json"
    )
    assert code == 0 and '"threshold_degree": 2' in out


# ------------------------------------------------------------------ basis and stamps


@pytest.mark.parametrize(
    ("degree", "heads"), [("2", "1000000000"), ("1000000000", "1"), ("600", "600")]
)
def test_basis_bounds_degree_times_heads(capsys, degree, heads):
    refused(
        capsys,
        "boolean",
        "basis",
        "--degree",
        degree,
        "--heads",
        heads,
        "--range",
        "3",
        needles=(str(MAX_BASIS_SPAN), "--degree or --heads"),
    )
    refused(
        capsys,
        "boolean",
        "basis",
        "--degree",
        degree,
        "--heads",
        heads,
        "--range",
        "3",
        "--optimal",
        needles=(str(MAX_BASIS_SPAN),),
    )


def test_basis_range_beyond_degree_times_heads_and_search_tables(capsys):
    refused(
        capsys,
        "boolean",
        "basis",
        "--degree",
        "2",
        "--heads",
        "4",
        "--range",
        str(2**64),
        needles=("range",),
    )
    with pytest.raises(InputError, match=str(MAX_BASIS_SPAN)):
        search.search_smallest_basis(1000, 1000, 5)


def test_stamps_3_8_answers_in_about_a_second(capsys):
    began = time.process_time()  # CPU time: a busy machine slows the clock, not the search
    code, out, err = run(capsys, "boolean", "stamps", "--degree", "3", "--size", "8", "--json")
    assert code == 0, err
    assert (
        out.strip() == '{"range": 93, "basis": [1, 3, 6, 10, 24, 26, 39, 41]}'
    )  # n(3, 8) = 93 (A001213)
    assert time.process_time() - began < 10.0  # ~1 s; > 45 s before issue 13


@pytest.mark.parametrize(
    ("summands", "size", "bound"),
    [
        ("3", "9", "k ≤ 8"),
        ("2", "12", "k ≤ 11"),
        ("4", "8", "k ≤ 7"),
        ("1000", "2", "k ≤ 1"),
        ("2", "1000000000", "k ≤ 11"),
        (str(2**64), "2", "k ≤ 1"),
        ("1", "65", "k ≤ 64"),
    ],
)
def test_stamps_refuses_beyond_its_table(capsys, summands, size, bound):
    refused(
        capsys,
        "boolean",
        "stamps",
        "--degree",
        summands,
        "--size",
        size,
        needles=(bound, "--size"),
    )


@pytest.mark.parametrize(("summands", "size"), [("0", "3"), ("-1", "3"), ("3", "0"), ("3", "-5")])
def test_stamps_refuses_non_positive(capsys, summands, size):
    refused(
        capsys, "boolean", "stamps", "--degree", summands, "--size", size, needles=("positive",)
    )


def test_stamps_formulas_and_the_timeout_backstop(capsys, monkeypatch):
    assert stamps(10**30, 1).range == 10**30 and stamps(1, 64) == search.Stamps(
        64, tuple(range(1, 65))
    )
    with pytest.raises(search.SearchTimeout, match="lower size or summands$") as err:
        stamps(3, 8, time_limit=0.0)
    assert err.value.render(lambda name: f"<{name}>").endswith("lower <size> or <summands>")
    monkeypatch.setattr(search.stamps, "__defaults__", (0.0,))
    err = refused(
        capsys, "boolean", "stamps", "--degree", "3", "--size", "8"
    )  # exit 2, not OSError's text
    assert "time limit" in err and "path" not in err


# Known n(D, k) (OEIS A001212 for D = 2, A001213 for D = 3, A001208 for k = 3) up to the table's
# bound.
KNOWN = {(2, k): v for k, v in zip(range(1, 12), [2, 4, 8, 12, 16, 20, 26, 32, 40, 46, 54])}
KNOWN |= {(3, k): v for k, v in zip(range(1, 9), [3, 7, 15, 24, 36, 52, 70, 93])}
KNOWN |= {
    (D, 3): v
    for D, v in zip(
        range(1, 18), [3, 8, 15, 26, 35, 52, 69, 89, 112, 146, 172, 212, 259, 302, 354, 418, 476]
    )
}
KNOWN |= {(4, 6): 108, (4, 7): 162, (5, 5): 126, (5, 6): 211}


SLOW = {(2, 11), (3, 8), (4, 7), (5, 6)}  # 0.5–2 s each (the table's edges)


@pytest.mark.parametrize("key", sorted(set(KNOWN) - SLOW))
def test_stamps_known_values_fast(key):
    D, k = key
    s = stamps(D, k)
    assert s.range == KNOWN[key] and len(s.basis) == k


@pytest.mark.slow
@pytest.mark.parametrize("key", sorted(SLOW))
def test_stamps_known_values_slow(key):
    D, k = key
    s = stamps(D, k)
    assert s.range == KNOWN[key] and len(s.basis) == k


def _old_stamps(D: int, k: int) -> tuple[int, tuple[int, ...]]:
    """The search before issue 13 (exhaustive over admissible bases, lexicographic order, growth
    bound only), kept here to check the new one returns the same basis, not just the same range."""
    from headcount.boolean.bases import basis_range

    best: list = [-1, ()]

    def rec(chosen: list[int], r: int) -> None:
        m = k - len(chosen)
        if m == 0:
            if r > best[0]:
                best[0], best[1] = r, tuple(chosen)
            return
        if search._bound_after(r, m, D, 1 << 62) <= best[0]:
            return
        for b in range((chosen[-1] if chosen else 0) + 1, r + 2):
            rec(chosen + [b], basis_range(chosen + [b], D))

    rec([], 0)
    return best[0], best[1]


@pytest.mark.parametrize(
    ("D", "k"), [(2, 2), (2, 5), (2, 6), (3, 3), (3, 4), (4, 3), (5, 3), (6, 2), (4, 4)]
)
def test_stamps_returns_the_same_basis_as_before(D, k):
    s = stamps(D, k)
    assert (s.range, s.basis) == _old_stamps(D, k)


# ------------------------------------------------------------------ the CLI documents the library's
# bounds


def test_help_texts_name_the_library_bounds(capsys):
    assert cli_boolean.MAX_BITS == functions.MAX_BITS
    assert cli_boolean.MAX_BASIS_SPAN == search.MAX_BASIS_SPAN
    assert cli_boolean.LP_MAX_N == threshold.MAX_N
    assert cli_boolean.STAMPS_TABLE == search.STAMPS_TABLE
    table = dict(
        re.findall(r"(\d+) at D ≤ (\d+)", search.STAMPS_TABLE)
    )  # the words match the function
    assert all(stamps_max_size(int(D)) == int(k) for k, D in table.items())
    assert [stamps_max_size(D) for D in range(1, 6)] == [64, 11, 8, 7, 6] and stamps_max_size(
        201
    ) == 1
    for command, needle in (
        ("construct", "1,000,000"),
        ("threshold-degree", "n ≤ 11"),
        ("basis", "250,000"),
        ("stamps", "k ≤ 64"),
    ):
        code, out, _ = run(capsys, "boolean", command, "--help")
        assert code == 0 and needle in " ".join(re.sub("[│╭╮╰╯─]", " ", out).split()), command
    assert certify.EXACT_WORK_LIMIT == 5e9
