"""The harness's write check (issue 28): a case that leaves an entry in its folder that no argument
names has written outside the target it was given, and is judged so."""

from __future__ import annotations

from tests.fuzz import harness
from tests.fuzz.harness import Case, Outcome, judge, stray_writes


def test_stray_writes_are_what_no_argument_names(tmp_path):
    (tmp_path / "fixture").touch()
    before = {"fixture"}
    for name in (
        "attention.png",
        "out",
        "m.safetensors",
        "r.db",
        "r.db-wal",
        "headcount-report",
        ".tmp1",
    ):
        (tmp_path / name).touch()
    argv = ["export", "--out", "out/tl", "--model=m.safetensors", "--db", "r.db"]
    assert stray_writes(argv, before, str(tmp_path)) == [".tmp1", "attention.png"]
    assert stray_writes(["x", "--out", str(tmp_path / "attention.png")], before, str(tmp_path)) == [
        ".tmp1",
        "attention.png",
        "m.safetensors",
        "out",
        "r.db",
        "r.db-wal",
    ]  # an absolute path names nothing in the case's folder
    assert (
        stray_writes(["x", "--out", "./"], before, str(tmp_path)) == []
    )  # the folder itself is named
    assert (
        stray_writes(["x", "--out", "./out/../attention.png"], before, str(tmp_path))[1]
        == "m.safetensors"
    )


def test_judge_calls_a_stray_write_a_failure():
    case = Case("g", "g c", "--out", "''", ("g", "c", "--out", ""))
    assert judge(case, Outcome(code=0, stray=["attention.png"]))[0] == "wrote-outside"
    assert judge(case, Outcome(code=2, stderr="error: x\n"))[0] == "refused"


def test_a_real_case_that_writes_where_it_is_told_is_clean():
    argv = (
        "induction",
        "construct",
        "--layers",
        "2",
        "--n",
        "8",
        "--alphabet",
        "3",
        "--out",
        "m.safetensors",
    )
    case = Case("induction", "induction construct", "--out", "m", argv)
    (out,) = harness.run_cases([case])
    assert out.stray == [] and judge(case, out)[0] == "passed"
