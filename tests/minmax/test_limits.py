"""Issue 13, point 2 for the minmax commands: every count has a bound, checked before any work,
refused with exit 2 and one line naming the limit, the option and (for certify) the method. Nothing
here allocates the huge sizes it names: every refusal comes from the estimates."""

from __future__ import annotations

import pytest

from headcount.cli import main
from headcount.common.errors import InputError
from headcount.common.resources import memory_limit_of
from headcount.minmax.brute import BRUTE_MAX_WORK
from headcount.minmax.certification import SUFFICIENT_MAX_WORK, certify_minmax
from headcount.minmax.construction import CODE_MAX_WORK, build_construction
from headcount.minmax.exact_verify import EXACT_MAX_TRIPLES, MAX_LIST_N
from headcount.minmax.search import SEARCH_MAX_WORK, search_single_head, smallest_dimension
from headcount.minmax.single_head import MAX_VALUE_ENTRIES
from headcount.minmax.task import MAX_ENUMERATE, MAX_M, MAX_N, count_multisets, estimate_multisets
from tests.cli_run import refused, run

# ---------------------------------------------------------------------------------------------
# certify: memory and work per method, the method named
# ---------------------------------------------------------------------------------------------


def test_certify_M_1e6_is_refused_naming_the_method(capsys):
    argv = ["minmax", "certify", "--M", "1000000", "--n", "4", "--heads", "2"]
    line = refused(capsys, *argv)
    assert line.startswith(
        "error: minmax certify (sufficient-condition) at --M 1000000 --n 4 needs about"
    )
    assert "--max-memory" in line
    line = refused(capsys, *argv, "--max-memory", "1P")  # memory to spare: the sign code's work
    assert (
        "minmax certify (sufficient-condition) at --M 1000000 --n 4: the sign code means about"
        in line
    )
    assert f"allowed up to {CODE_MAX_WORK:.3g} (lower --M)" in line


def test_certify_M_1e12_and_n_beyond_the_exact_scores(capsys):
    base = ["minmax", "certify", "--heads", "2"]
    line = refused(capsys, *base, "--M", str(10**12), "--n", "4")
    assert (
        line
        == f"error: --M {10**12} is too large: allowed up to 2^26 = {MAX_M} (exact float64 scores)"
    )
    line = refused(capsys, *base, "--M", "16", "--n", str(2**61))
    assert (
        line
        == f"error: --n {2**61} is too large: allowed up to 2^60 = {MAX_N} (exact float64 scores)"
    )


def test_certify_exact_histogram_is_bounded_by_its_triples(capsys):
    argv = [
        "minmax",
        "certify",
        "--M",
        "2000",
        "--n",
        "4",
        "--heads",
        "2",
        "--method",
        "exact-histogram",
    ]
    line = refused(capsys, *argv)
    assert line.startswith(
        "error: minmax certify (exact-histogram) at --M 2000 --n 4 means about 4e+09"
    )
    assert (
        f"triples per task (M²(M+1)/2); allowed up to {EXACT_MAX_TRIPLES:.3g} (lower --M)" in line
    )


def test_certify_sufficient_condition_and_brute_force_bounds(capsys):
    base = ["minmax", "certify", "--n", "4", "--heads", "2"]
    line = refused(capsys, *base, "--M", "50000", "--code", "compact")
    assert "minmax certify (sufficient-condition) at --M 50000 --n 4 means about" in line
    assert f"allowed up to {SUFFICIENT_MAX_WORK:.3g} (lower --M)" in line
    line = refused(capsys, *base, "--M", "3000", "--method", "brute-force")
    assert (
        "minmax certify (brute-force) at --M 3000 --n 4: brute force would enumerate about 3.38e+12"
        in line
    )
    assert f"allowed up to {MAX_ENUMERATE}" in line


def test_certify_seed_and_memory_checked_in_the_library():
    with pytest.raises(InputError, match="^seed must be ≥ 0, got -1") as err:
        certify_minmax(16, 8, 2, seed=-1)
    assert err.value.param == "seed"
    with (
        memory_limit_of("1M"),
        pytest.raises(InputError, match=r"minmax certify \(exact-histogram\)"),
    ):
        certify_minmax(512, 8, 2)


def test_certify_still_works_at_usual_sizes():
    cert = certify_minmax(
        2048, 8, 2, code="compact"
    )  # sufficient-condition, well within its bounds
    assert cert.method == "sufficient-condition" and cert.certified
    assert cert.inputs_covered == count_multisets(2048, 8)


# ---------------------------------------------------------------------------------------------
# construct, verify
# ---------------------------------------------------------------------------------------------


def test_construct_bounds(capsys, tmp_path):
    out = str(tmp_path / "m.safetensors")
    base = ["minmax", "construct", "--n", "4", "--heads", "2", "--out", out]
    line = refused(capsys, *base, "--M", "1000000", "--max-memory", "1P")
    assert line.startswith(
        "error: the minmax construction at --M 1000000 --code sign: the sign code means"
    )
    assert refused(capsys, *base, "--M", "8", "--seed", "-1") == "error: --seed must be ≥ 0, got -1"
    line = refused(capsys, *base, "--M", "4000000", "--code", "compact", "--max-memory", "1G")
    assert line.startswith(
        "error: the minmax construction at --M 4000000 --code compact needs about"
    )
    with pytest.raises(InputError, match="^M 100000000 is too large") as err:
        build_construction(10**8, 4, 2, code="compact")
    assert err.value.param == "M"


def test_verify_bounds(capsys):
    base = ["minmax", "verify", "--n", "4", "--random-model", "0"]
    line = refused(capsys, *base, "--M", "1000000", "--dim", "2")
    assert line.startswith("error: minmax verify (exact) at --M 1000000 --n 4 needs about")
    line = refused(capsys, *base, "--M", "2000", "--dim", "2")
    assert f"allowed up to {EXACT_MAX_TRIPLES:.3g} (lower --M)" in line
    line = refused(capsys, *base, "--M", "8", "--dim", "1000000000")
    assert (
        f"M·dim = 8000000000 values; allowed up to {MAX_VALUE_ENTRIES} (" in line
        and "lower --dim" in line
    )
    line = refused(
        capsys,
        "minmax",
        "verify",
        "--M",
        "8",
        "--n",
        "1000000000",
        "--random-model",
        "0",
        "--dim",
        "2",
    )
    assert "--n 1000000000 is too large for a printed counterexample (a list of n tokens)" in line
    assert line.endswith(f"allowed up to {MAX_LIST_N}")
    line = refused(capsys, *base, "--M", "8", "--dim", "2", "--random-model", "-1")
    assert line == "error: --random-model must be an integer ≥ 0, got -1"
    line = refused(capsys, *base, "--M", "3000", "--dim", "2", "--method", "brute")
    assert (
        "brute force would enumerate about 3.38e+12 inputs (C(n+M−1, n)); allowed up to 2000000"
        in line
    )
    line = refused(
        capsys,
        "minmax",
        "verify",
        "--M",
        "1900",
        "--n",
        "2",
        "--random-model",
        "0",
        "--dim",
        "2",
        "--method",
        "brute",
    )
    assert f"operations per task (inputs·n·M·heads); allowed up to {BRUTE_MAX_WORK:.3g}" in line


# ---------------------------------------------------------------------------------------------
# search
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "option, value, needle",
    [
        ("--restarts", "1000000000", "triple evaluations; allowed up to"),
        ("--steps", "1000000000", "triple evaluations; allowed up to"),
        ("--dim", "1000000000", "needs about"),
        ("--M", "1000000", "needs about"),
        ("--seed", "-1", "--seed must be ≥ 0, got -1"),
    ],
)
def test_search_bounds(capsys, option, value, needle):
    args = {"--M": "6", "--n": "3", "--dim": "2", option: value}
    line = refused(capsys, "minmax", "search", *[x for kv in args.items() for x in kv])
    assert needle in line
    if "allowed" in needle:
        assert f"{SEARCH_MAX_WORK:.3g} (lower --restarts, --steps, --dim or --M)" in line


def test_search_progress_bar_changes_nothing():
    plain = smallest_dimension(5, 3, 1, restarts=1, steps=3).to_json()
    shown = smallest_dimension(5, 3, 1, restarts=1, steps=3, progress=True).to_json()
    for result in (plain, shown):
        for r in result["results"].values():
            r.pop("seconds")
    assert plain == shown
    with pytest.raises(InputError, match="triple evaluations"):
        search_single_head(64, 4, 2, restarts=10**6)


# ---------------------------------------------------------------------------------------------
# Estimates and --help
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("M, n", [(2, 2), (6, 3), (16, 8), (64, 4), (1000, 5)])
def test_multiset_estimate_is_close(M, n):
    assert estimate_multisets(M, n) == pytest.approx(count_multisets(M, n), rel=1e-9)
    assert estimate_multisets(MAX_M, MAX_N) == float("inf")


def test_help_texts_state_the_bounds(capsys):
    def help_of(command: str) -> str:
        code, out, _ = run(capsys, "minmax", command, "--help")
        assert code == 0
        return " ".join(out.replace("│", " ").split())

    assert MAX_M == 2**26 and MAX_N == 2**60
    for command in ("certify", "construct", "verify", "search"):
        text = help_of(command)
        assert "2 ≤ M ≤ 2^26" in text and "2 ≤ n ≤ 2^60" in text
    certify = help_of("certify")
    assert EXACT_MAX_TRIPLES == 2**30 and "≤ 2^30 triples" in certify
    assert SUFFICIENT_MAX_WORK == 2**36 and "≤ 2^36 multiply-adds" in certify
    assert (
        CODE_MAX_WORK == 2**34
        and "M²·d/2 ≤ 2^34" in certify
        and "M²·d/2 ≤ 2^34" in help_of("construct")
    )
    assert f"{MAX_ENUMERATE:,}" in certify
    verify = help_of("verify")
    assert MAX_VALUE_ENTRIES == 2**24 and "M·dim ≤ 2^24" in verify and "2,000,000 inputs" in verify
    assert BRUTE_MAX_WORK == 2**31 and "2^31 operations" in verify
    assert SEARCH_MAX_WORK == 2**31 and "≤ 2^31 triple evaluations" in help_of("search")


def test_dim_with_a_model_file_is_a_contradiction(tmp_path, capsys):

    path = tmp_path / "mm.safetensors"
    assert main_ok(
        ["minmax", "construct", "--M", "8", "--n", "4", "--heads", "1", "--out", str(path)]
    )
    with pytest.raises(SystemExit) as info:
        main(["minmax", "verify", "--M", "8", "--n", "4", "--model", str(path), "--dim", "3"])
    assert info.value.code == 2 and "--dim describes the random head" in capsys.readouterr().err


def main_ok(argv) -> bool:

    try:
        main(argv)
    except SystemExit as exit_info:
        return exit_info.code in (0, None)
    return True
