"""The fuzz suite: the quick subset (every command × a sample of values, the combinations, 40 files) runs
with the default tests; the full set (every option × every value, ≥ 200 files, every broken database and
sweep file) is `slow`. Each test collects every failure and reports them grouped by command and kind."""

from __future__ import annotations

import random
import sys

import pytest

from tests.fuzz import combos, harness, options, stores
from tests.fuzz.files import model_file_cases
from tests.fuzz.harness import Case, Outcome, judge

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork + RLIMIT_AS: Linux only")

QUICK_VALUES = 2  # values per (command, option) in the quick subset
QUICK_FILES = 40


def _files(fixtures) -> list[Case]:
    return model_file_cases(fixtures) + stores.db_cases(fixtures) + stores.sweep_file_cases(fixtures)


def _bases(fixtures) -> tuple[str, str | None]:
    db = fixtures.results_db
    return str(fixtures.models["boolean"]), None if db is None else str(db)


def _models(fixtures) -> dict[str, str]:
    return {kind: str(path) for kind, path in fixtures.models.items()}


# --- the harness itself ------------------------------------------------------------------------------


def _case(**kw) -> Case:
    return Case("g", "g c", "--x", "v", ("g", "c", "--json"), **kw)


@pytest.mark.parametrize(
    ("outcome", "verdict"),
    [
        (Outcome(code=2, stderr="error: n must be ≥ 1\n"), "refused"),
        (Outcome(code=2, stderr="error: one\nerror: two\n"), "stderr-lines"),
        (Outcome(code=2, stderr="Traceback (most recent call last):\n  x\nValueError: y\n"), "traceback"),
        (Outcome(code=1, stderr="internal error (a bug in headcount …): KeyError: 'x'\n"), "internal-error"),
        (Outcome(code=0, stdout='{"a": 1}\n', one_json_object=True), "passed"),
        (Outcome(code=0, stdout="{} {}\n"), "json"),
        (Outcome(timed_out=True), "hang"),
        (Outcome(signal=9), "memory"),
        (Outcome(signal=11), "crash"),
        (Outcome(code=2, stderr="error: out of memory: use smaller sizes\n"), "memory"),
        (Outcome(code=2, stderr="error: x\n", markers_hit=["/tmp/m"]), "code-execution"),
        (Outcome(code=130, stderr="error: interrupted\n"), "exit-code"),
    ],
)
def test_judge_applies_the_cli_contract(outcome, verdict):
    assert judge(_case(), outcome)[0] == verdict


def test_judge_refuses_exit_0_where_the_input_must_be_refused():
    assert judge(_case(valid_ok=False), Outcome(code=0, one_json_object=True))[0] == "accepted"


def test_harness_runs_each_case_in_a_capped_forked_child():
    cases = [
        Case(
            "induction",
            "induction solve",
            "--hops",
            "'1'",
            ("induction", "solve", "--input", "0 1 0 1", "--json"),
        ),
        Case(
            "induction",
            "induction solve",
            "--hops",
            "'abc'",
            ("induction", "solve", "--input", "1", "--hops", "x"),
        ),
    ]
    first, second = harness.run_cases(cases)
    assert judge(cases[0], first) == ("passed", "") and first.one_json_object
    assert judge(cases[1], second)[0] == "refused" and "--hops" in second.stderr
    (hung,) = harness.run_cases(cases[:1], timeout=0.0)
    assert judge(cases[0], hung)[0] == "hang"


def test_harness_sees_markers_forbidden_output_and_the_memory_cap(tmp_path, monkeypatch):
    marker = tmp_path / "MARKER"
    marker.touch()  # as if the case had run code that made it
    solve = ("induction", "solve", "--input", "0 1 0 1", "--json")
    cases = [
        Case("induction", "induction solve", "-", "marker", solve, markers=(str(marker),)),
        Case("induction", "induction solve", "-", "forbidden", solve, forbidden=('"outputs"',)),
    ]
    assert [judge(c, o)[0] for c, o in zip(cases, harness.run_cases(cases))] == ["code-execution"] * 2
    monkeypatch.setenv("HEADCOUNT_FUZZ_CAP_MARGIN", "0")  # no room above the zygote: any allocation fails
    plain = Case("induction", "induction solve", "-", "capped", solve)
    (capped,) = harness.run_cases([plain])
    # how an allocation fails with no room at all depends on where it happens (a MemoryError, or an import
    # that fails with one inside): the cap must have stopped the command, whichever way it surfaces
    assert judge(plain, capped)[0] in ("memory", "crash", "internal-error", "traceback")


# --- the fuzz sets ------------------------------------------------------------------------------------


def _assert_clean(cases: list[Case], title: str) -> None:
    report = harness.check(cases, title)
    if report.failures:
        pytest.fail(report.describe(), pytrace=False)


def test_quick_fuzz_subset(fuzz_fixtures):
    """Every (command, option) with QUICK_VALUES seeded values, every combination, a sample of the
    --max-memory values and QUICK_FILES files (models, databases, sweep files)."""
    rng = random.Random(13)
    cases = options.option_cases(*_bases(fuzz_fixtures), sample=QUICK_VALUES)
    cases += combos.combo_cases(_models(fuzz_fixtures))
    cases += rng.sample(options.max_memory_cases(), 6)
    cases += rng.sample(_files(fuzz_fixtures), QUICK_FILES)
    _assert_clean(cases, "quick")


@pytest.mark.slow
def test_full_fuzz_options(fuzz_fixtures):
    """Every option of every command × every hostile value of its kind (≥ 1,500 cases)."""
    cases = options.option_cases(*_bases(fuzz_fixtures))
    cases += combos.combo_cases(_models(fuzz_fixtures)) + options.max_memory_cases()
    assert len(cases) >= 1500
    _assert_clean(cases, "options")


@pytest.mark.slow
def test_full_fuzz_files(fuzz_fixtures):
    """Every corrupt or malicious model file for every --model command, every broken database for every
    --db command, every hostile sweep file (≥ 200 cases)."""
    cases = _files(fuzz_fixtures)
    assert len(cases) >= 200
    _assert_clean(cases, "files")
