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
        [sys.executable, str(script), "--quick", "--json"], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert isinstance(result, dict) and result
