"""The benchmark scripts run and print one JSON object (slow: about a minute each)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.slow
@pytest.mark.parametrize(
    "name", ["bench_induction.py", "bench_minmax.py", "bench_boolean.py", "bench_learn.py"]
)
def test_bench_quick_prints_json(name):
    script = Path(__file__).resolve().parents[1] / "benchmarks" / name
    done = subprocess.run(
        [sys.executable, str(script), "--quick", "--json"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert isinstance(result, dict) and result


@pytest.mark.slow
def test_bench_certify_quick_json():
    """bench_certify.py --quick: blocked and reference certificates identical, every pass correct,
    the done-when block with its five criteria (the two that need the default run's sizes not
    measured)."""
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_certify.py"
    done = subprocess.run(
        [sys.executable, str(script), "--quick", "--json"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result["mode"] == "quick" and result["certificates_identical"] is True
    assert [r["n"] for r in result["passes"]] == [1024, 4096]
    for r in result["passes"]:
        checks = {k: v for k, v in r.items() if k.endswith(("_correct", "_correct_and_proven"))}
        assert len(checks) == 6 and all(checks.values()), checks
        visible = r["repeats"] * r["sequences"] * 3 * r["n"] * (r["n"] + 1) // 2  # 3 heads, causal
        assert r["skipped"] == {} and r["attention_work"]["score_entries"] == visible
    assert [(m["n"], m["algorithm"]) for m in result["memory"]] == [
        (4096, "blocked"),
        (4096, "reference"),
    ]
    assert all(m["certified_correct"] and m["proven_fraction"] == 1.0 for m in result["memory"])
    assert [(r["n"], r["samples"], r["identical"]) for r in result["end_to_end"]] == [
        (1024, 2, True)
    ]
    assert (result["exhaustive"]["n"], result["exhaustive"]["inputs_checked"]) == (14, 2**14)
    statuses = [d["status"] for d in result["done_when"]]
    assert len(statuses) == 5 and statuses[1] == statuses[4] == "n/a (not measured)"
    assert {statuses[0], statuses[2], statuses[3]} <= {"PASS", "FAIL"}
    assert "GPU figures:" in done.stderr


@pytest.mark.slow
def test_bench_certify_pruning_quick_json():
    """bench_certify.py --pruning --quick --e2e (bench_pruning.py): pruned and full passes and
    certificates identical, the exponent fitted over three lengths."""
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_certify.py"
    done = subprocess.run(
        [sys.executable, str(script), "--pruning", "--quick", "--json", "--e2e"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result["mode"] == "quick" and result["identical"] is True
    assert [r["n"] for r in result["passes"]] == [4096]
    assert result["passes"][0]["pruned"]["attention_work"]["pruned_blocks"] > 0
    assert [p["n"] for p in result["scaling"]["points"]] == [4096, 8192, 16384]
    assert result["end_to_end"]["identical"] is True and result["end_to_end"]["inputs"] > 0
