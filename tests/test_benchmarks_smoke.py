"""The benchmark script runs and prints one JSON object (slow: about a minute)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.slow
def test_bench_induction_quick_prints_json():
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_induction.py"
    done = subprocess.run([sys.executable, str(script), "--quick", "--json"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert isinstance(result, dict) and result
