"""Golden outputs: representative commands of every group, their JSON (or their exit code and
one-line error) stored from main before a restructuring, compared field by field after it.

Why: issue 12 restructures the code (scenario shape, thin CLI, typed results) with behaviour
unchanged; this is the check. Timing fields are left out; the temporary folder's path prints as
{tmp}. To record the current outputs as golden (only when a change of behaviour is intended, and say
so in the commit):

    HEADCOUNT_GOLDEN_UPDATE=1 python -m pytest -q tests/golden
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shlex
from pathlib import Path
from typing import Any

import pytest

from headcount.cli import main

GOLDEN = Path(__file__).with_name("golden.json")
UPDATE = os.environ.get("HEADCOUNT_GOLDEN_UPDATE") == "1"

# (name, command line); run in this order in one folder, so later commands can read earlier files.
COMMANDS = [
    ("induction-solve", "induction solve --input '3 0 2 3 0 2'"),
    ("induction-solve-hops", "induction solve --input '1 2 1 2 1' --hops 2"),
    (
        "induction-construct-two",
        "induction construct --layers 2 --n 16 --alphabet 4 --out {tmp}/two.safetensors",
    ),
    (
        "induction-construct-one",
        "induction construct --layers 1 --n 8 --alphabet 3 --out {tmp}/one.safetensors",
    ),
    (
        "induction-predict-file-fixed",
        "induction predict --model {tmp}/two.safetensors --input '3 0 2 3 0 2 1 3' --precision "
        "fixed:8",
    ),
    (
        "induction-predict-one-layer",
        "induction predict --layers 1 --alphabet 4 --input '3 0 2 3 0 2 1 3'",
    ),
    (
        "induction-predict-bfloat16",
        "induction predict --layers 2 --alphabet 4 --input '3 0 2 3' --precision bfloat16",
    ),
    ("induction-certify-two-exhaustive", "induction certify --layers 2 --n 6 --alphabet 3"),
    ("induction-certify-one-exhaustive", "induction certify --layers 1 --n 6 --alphabet 2"),
    (
        "induction-certify-sampled",
        "induction certify --layers 2 --n 64 --alphabet 8 --samples 8 --seed 1",
    ),
    (
        "induction-certify-file",
        "induction certify --model {tmp}/two.safetensors --n 16 --alphabet 4 --samples 8",
    ),
    (
        "induction-protocol",
        "induction protocol --k 6 --random-model 0 --heads 1 --dim 2 --precision-bits 6",
    ),
    (
        "induction-protocol-two-heads",
        "induction protocol --k 5 --random-model 3 --heads 2 --dim 3 --precision-bits 8",
    ),
    (
        "induction-refute",
        "induction refute --k 12 --random-model 0 --heads 1 --dim 2 --precision-bits 4",
    ),
    ("induction-certify-bad-n", "induction certify --layers 2 --n 0 --alphabet 3"),
    ("minmax-certify", "minmax certify --M 16 --n 8 --heads 2"),
    ("minmax-construct", "minmax construct --M 8 --n 4 --heads 2 --out {tmp}/mm.safetensors"),
    ("minmax-verify-exact", "minmax verify --M 8 --n 4 --random-model 0 --dim 2"),
    ("minmax-verify-brute", "minmax verify --M 6 --n 3 --random-model 1 --dim 2 --method brute"),
    ("minmax-verify-two-heads-refused", "minmax verify --model {tmp}/mm.safetensors --M 8 --n 4"),
    ("minmax-search", "minmax search --M 6 --n 3 --dim 2 --restarts 1 --steps 10"),
    ("boolean-construct", "boolean construct --function xor --n 8 --degree 2 --heads 4"),
    (
        "boolean-construct-out",
        "boolean construct --function xor --n 6 --degree 2 --heads 3 --out {tmp}/xor.safetensors",
    ),
    ("boolean-check", "boolean check --model {tmp}/xor.safetensors --function xor"),
    ("boolean-construct-impossible", "boolean construct --function xor --n 8 --degree 1 --heads 4"),
    ("boolean-threshold-degree", "boolean threshold-degree --truth-table 0110100110010110"),
    ("boolean-basis", "boolean basis --degree 2 --heads 4 --range 8"),
    ("boolean-basis-optimal", "boolean basis --degree 2 --heads 4 --range 8 --optimal"),
    ("boolean-stamps", "boolean stamps --degree 2 --size 4"),
    ("usage-error", "induction solve"),
]


def _drop_timing(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: _drop_timing(v)
            for k, v in value.items()
            if k not in ("seconds", "wall_seconds") and not k.endswith("_seconds")
        }
    if isinstance(value, list):
        return [_drop_timing(v) for v in value]
    return value


def _run(line: str, tmp: str) -> dict[str, Any]:
    argv = [*shlex.split(line.replace("{tmp}", tmp)), "--json"]
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(argv)
        except SystemExit as exit_info:
            code = exit_info.code or 0
    text, error = out.getvalue().replace(tmp, "{tmp}"), err.getvalue().replace(tmp, "{tmp}").strip()
    result: dict[str, Any] = {"exit": code}
    if code == 0:
        assert len(text.strip().splitlines()) == 1, f"{line}: --json must print one line"
        result["json"] = _drop_timing(json.loads(text))
    else:
        assert len(error.splitlines()) == 1, f"{line}: an error is one line, got {error!r}"
        result["error"] = error
    return result


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> dict[str, dict[str, Any]]:
    tmp = str(tmp_path_factory.mktemp("golden"))
    results = {name: _run(line, tmp) for name, line in COMMANDS}
    if UPDATE:
        GOLDEN.write_text(json.dumps(results, indent=1, ensure_ascii=False, sort_keys=True) + "\n")
    return results


def _same(a: Any, b: Any, where: str = "") -> list[str]:
    """Where a and b differ: exactly, except floats, which may differ by 1e-9 relative (a BLAS or
    libm of another build may round the last bits differently; behaviour is the same)."""
    if isinstance(a, float) and isinstance(b, (int, float)) and not isinstance(b, bool):
        return [] if abs(a - b) <= 1e-9 * max(abs(a), abs(b)) else [f"{where}: {a!r} != {b!r}"]
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return [f"{where}: keys {sorted(a.keys() ^ b.keys())} differ"]
        return [d for k in a for d in _same(a[k], b[k], f"{where}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in _same(x, y, f"{where}[{i}]")]
    return [] if a == b else [f"{where}: {a!r} != {b!r}"]


@pytest.mark.parametrize("name", [name for name, _ in COMMANDS])
def test_output_is_golden(outputs, name):
    golden = json.loads(GOLDEN.read_text())
    assert name in golden, f"no golden output for {name}: record it with HEADCOUNT_GOLDEN_UPDATE=1"
    assert _same(outputs[name], golden[name]) == []


def test_comparison_can_fail():
    assert _same({"a": [1.0, "⊥"]}, {"a": [1.0 + 1e-6, "⊥"]}) and _same({"a": 1}, {"b": 1})
    assert _same({"a": [1.0, 2]}, {"a": [1.0 + 1e-12, 2]}) == []


def test_every_command_group_is_covered():
    groups = {line.split()[0] for _, line in COMMANDS}
    assert {"induction", "minmax", "boolean"} <= groups
