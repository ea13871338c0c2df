"""Reproduce: report files agree with the returned summary, HTML is self-contained, broken claims
FAIL."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys

import numpy as np
import pytest

from headcount.common.jsonable import jsonable
from headcount.report.claim_ids import CLAIM_IDS
from headcount.report.claims import (
    INDUCTION_PAPER,
    ClaimResult,
    claim,
    fit_line,
    fit_log2,
    unregister,
)
from headcount.report.induction.constructions import exhaustive_cases
from headcount.report.reproduce import load_claims, run_reproduce, select_claims

CHEAP = "induction.two_layer.constant_dim"


def _quiet(line: str) -> None:
    pass


@pytest.fixture
def temporary_claims():
    """Register claims for one test and always remove them afterwards."""
    load_claims()
    added = []

    def add(cid, fn, **kw):
        claim(cid, paper=INDUCTION_PAPER, source="§0", statement="a claim made for a test", **kw)(
            fn
        )
        added.append(cid)

    yield add
    for cid in added:
        unregister(cid)


def test_report_files_exist_and_agree(tmp_path, capsys):
    summary = run_reproduce("quick", only=CHEAP, out_dir=tmp_path, progress=_quiet)
    assert capsys.readouterr().out == ""  # progress never goes to stdout
    assert [c.id for c in summary.claims] == [CHEAP]
    assert summary.passed + summary.failed == 1
    for key in ("claims", "passed", "failed", "wall_seconds", "out_dir"):
        assert key in summary.to_json()
    for c in summary.to_json()["claims"]:
        assert {"id", "paper", "statement", "measured", "status"} <= set(c)
        assert c["status"] in ("PASS", "FAIL")

    on_disk = json.loads((tmp_path / "summary.json").read_text())
    assert on_disk == json.loads(json.dumps(summary.to_json()))
    assert on_disk["claims"][0]["measured"]["dim_values"] == [19]

    md = (tmp_path / "report.md").read_text()
    page = (tmp_path / "report.html").read_text()
    for c in summary.to_json()["claims"]:
        assert c["id"] in md and c["id"] in page
        assert c["status"] in md and c["status"] in page
    assert f"{summary.passed} passed, {summary.failed} failed" in md
    assert f"{summary.passed} passed, {summary.failed} failed" in page
    assert not list(tmp_path.glob(".*.tmp"))  # atomic writes leave no temporaries


def test_figure_inlined_and_no_external_refs(tmp_path, temporary_claims):
    # A synthetic precision claim with series drives the precision figure without running
    # certificates.
    from headcount.report import figures
    from headcount.report.induction import construction_sizes

    def fake(ctx):
        n = [64, 256, 1024]
        return ClaimResult(
            {"c": 1.5},
            "PASS",
            "synthetic",
            {"n": n, "precision_bits": [10, 13, 16], "S": [64], "c": 1.5, "c_prime": 1.0},
        )

    temporary_claims("test.synthetic.precision", fake)
    figures.FIGURES["test_fig"] = figures.FigureSpec(
        "test_fig", "test.synthetic.precision", construction_sizes.draw_precision
    )
    try:
        summary = run_reproduce("quick", only="test.synthetic.*", out_dir=tmp_path, progress=_quiet)
    finally:
        figures.FIGURES.pop("test_fig")
    assert summary.passed == 1
    assert (tmp_path / "test_fig.png").stat().st_size > 1000
    assert (tmp_path / "test_fig.svg").read_text().lstrip().startswith("<?xml")
    page = (tmp_path / "report.html").read_text()
    low = page.lower()
    assert "http://" not in low and "https://" not in low and "<script src" not in low
    assert "<link" not in low and "@import" not in low
    assert re.search(r'<img [^>]*src="data:image/png;base64,', page)
    assert not re.search(r'src="(?!data:)', page)  # every src is inlined
    md = (tmp_path / "report.md").read_text()
    assert "![test_fig](test_fig.png)" in md
    assert (
        json.loads((tmp_path / "summary.json").read_text())["figures"][0]["png"] == "test_fig.png"
    )


def test_raising_claim_becomes_fail(tmp_path, temporary_claims):
    def boom(ctx):
        raise RuntimeError("deliberate failure")

    temporary_claims("test.boom", boom)
    summary = run_reproduce("quick", only="test.boom", out_dir=tmp_path, progress=_quiet)
    assert summary.failed == 1 and summary.passed == 0
    (row,) = summary.to_json()["claims"]
    assert row["status"] == "FAIL"
    assert "RuntimeError" in row["detail"] and "deliberate failure" in row["detail"]
    assert "FAIL" in (tmp_path / "report.html").read_text()


def test_registry_cleanup_after_temporary_claims():
    assert not any(cid.startswith("test.") for cid in load_claims())


def test_only_matching_nothing_raises(tmp_path):
    with pytest.raises(ValueError, match="induction.two_layer.exhaustive"):
        run_reproduce("quick", only="no-such-claim*", out_dir=tmp_path, progress=_quiet)
    assert not (tmp_path / "summary.json").exists()
    with pytest.raises(ValueError, match="scale"):
        run_reproduce("medium", only=CHEAP, out_dir=tmp_path, progress=_quiet)


def test_only_glob_and_substring():
    ids = [c.id for c in select_claims("induction.two_layer.*")]
    assert ids and all(i.startswith("induction.two_layer.") for i in ids)
    assert [c.id for c in select_claims("constant_dim")] == [CHEAP]
    assert len(select_claims("constant_dim,separation")) == 2
    assert len(select_claims(None)) == len(load_claims())


def test_claims_have_both_scales_and_metadata():
    for c in load_claims().values():
        if c.id.startswith("test."):
            continue
        assert c.paper and c.source and c.statement
        assert set(c.params) == {"quick", "full"}


def test_fit_line_recovers_synthetic_slope():
    rng = np.random.default_rng(0)
    n = 2.0 ** np.arange(4, 14)
    p = 1.7 * np.log2(n) + 3.0
    c, c0 = fit_log2(n, p)
    assert c == pytest.approx(1.7) and c0 == pytest.approx(3.0)
    noisy = p + rng.normal(0, 0.05, size=p.shape)
    c, c0 = fit_log2(n, noisy)
    assert abs(c - 1.7) < 0.05 and abs(c0 - 3.0) < 0.5
    assert fit_line([0, 1, 2], [1, 3, 5]) == pytest.approx((2.0, 1.0))
    with pytest.raises(ValueError):
        fit_line([3, 3], [1, 2])


def test_exhaustive_cases_within_limit():
    cases = exhaustive_cases()
    assert (2, 20) in cases and (2, 21) not in cases and (7, 7) in cases and (8, 8) not in cases
    assert all(2 <= S <= n and S**n <= 2_000_000 for S, n in cases)


def test_jsonable():
    out = jsonable({"a": np.int64(3), "b": (np.float32(0.5), math.inf), 1: np.arange(2)})
    assert json.loads(json.dumps(out)) == {"a": 3, "b": [0.5, None], "1": [0, 1]}


def test_an_unwritable_out_folder_is_refused_before_any_claim_runs(tmp_path, monkeypatch):
    import os

    from headcount.common.errors import InputError

    ran = []
    monkeypatch.setattr(
        "headcount.report.reproduce.run_claim", lambda claim, ctx: ran.append(claim)
    )
    real_access = os.access
    monkeypatch.setattr(
        os,
        "access",
        lambda path, mode: False if str(path) == str(tmp_path) else real_access(path, mode),
    )
    with pytest.raises(InputError, match="cannot be written"):
        run_reproduce("quick", only=CHEAP, out_dir=tmp_path, progress=_quiet)
    assert ran == []


def test_the_claim_ids_list_is_the_registry():
    """report.claim_ids.CLAIM_IDS (what `reproduce --only` is checked against before any claim
    loads) lists exactly the registered claims."""
    assert sorted(CLAIM_IDS) == sorted(i for i in load_claims() if not i.startswith("test."))


def test_a_bad_only_is_refused_before_the_claims_load():
    code = (
        "import sys\nfrom headcount.cli import main\ntry:\n    main(['reproduce', '--only', "
        "'no-such'])\n"
        "except SystemExit as e:\n    print(e.code, 'headcount.report.reproduce' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["2", "False"] and "matches no claim" in done.stderr
