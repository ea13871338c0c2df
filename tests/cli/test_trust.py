"""A command line scripts can trust (issue 30, point 4): --require-certified turns a verdict that is
not certified into exit 3 (the output printed all the same); one spelling per idea (--random-model
SEED for a seeded random model, --degree for D; the old spellings hidden, noted as deprecated on
stderr); the same default for the same option across commands; examples/sweep.toml is a real sweep.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import typer

from headcount.cli import app
from headcount.cli.common import NOT_CERTIFIED
from tests.cli_run import refused, run

ROOT = Path(__file__).resolve().parents[2]


def _json_run(capsys, *argv: str) -> tuple[int, dict, str]:
    """(exit code, the one JSON object on stdout, stderr) of `headcount argv… --json`."""
    code, out, err = run(capsys, *argv, "--json")
    assert len(out.strip().splitlines()) == 1, (argv, code, out, err)
    return code, json.loads(out), err


# ---------------------------------------------------------------------------------------------
# --require-certified: exit 3 when the verdict is not certified, the output unchanged
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, str]:
    """A Boolean xor model (n = 6, D = 2, H = 3) and a two-layer induction construction whose ⊥
    logit can never win (wrong wherever the answer is ⊥)."""
    from headcount.boolean.certification import construct_and_certify
    from headcount.core.model.files import save_model
    from headcount.induction.construction import two_layer_induction

    folder = tmp_path_factory.mktemp("trust")
    xor = folder / "xor.safetensors"
    construct_and_certify("xor", 6, 2, 3, out=str(xor))  # what `boolean construct --out` writes
    model = two_layer_induction(6, 3)
    W_U = model.decoder.W_U.copy()
    W_U[:, -1] = 0
    b_U = np.where(np.arange(4) == 3, -1e9, model.decoder.b_U)
    broken = folder / "broken.safetensors"
    save_model(replace(model, decoder=replace(model.decoder, W_U=W_U, b_U=b_U)), broken)
    return {"xor": str(xor), "broken": str(broken)}


# (command, argv of a certified case, argv of a case that is not, the result's verdict field)
CASES = {
    "induction certify": (
        ["--layers", "2", "--n", "6", "--alphabet", "3"],
        ["--model", "{broken}", "--n", "6", "--alphabet", "3"],
        lambda j: j["certified"],
    ),
    "minmax verify": (
        ["--M", "2", "--n", "2", "--random-model", "42", "--dim", "2"],  # a head doing both
        ["--M", "8", "--n", "4", "--random-model", "0", "--dim", "2"],  # wrong on both
        lambda j: j["errors_min"] == 0 and j["errors_max"] == 0,
    ),
    "boolean check": (
        ["--model", "{xor}", "--function", "xor"],
        ["--model", "{xor}", "--function", "and"],  # an xor model is not an and
        lambda j: j["certified"],
    ),
}


@pytest.mark.parametrize("command", list(CASES))
def test_require_certified_exits_3_only_when_not_certified(capsys, files, command):
    good, bad, verdict = CASES[command]
    good, bad = ([a.format(**files) for a in argv] for argv in (good, bad))
    argv = command.split()
    code, result, _ = _json_run(capsys, *argv, *good, "--require-certified")
    assert code == 0 and verdict(result) is True
    code, plain, _ = _json_run(capsys, *argv, *bad)  # without the flag: ran and answered
    assert code == 0 and verdict(plain) is False
    code, result, err = _json_run(capsys, *argv, *bad, "--require-certified")
    assert code == NOT_CERTIFIED == 3 and err == ""
    assert _timeless(result) == _timeless(plain)  # the same output, one JSON object
    code, out, _ = run(capsys, *argv, *bad, "--require-certified")  # the human line too
    assert code == 3 and out.strip()


def _timeless(result: dict) -> dict:
    return {k: v for k, v in result.items() if "seconds" not in k}


def _not_certified(monkeypatch, module: str, name: str, spoil) -> None:
    """Make the library function `module.name` answer a result spoiled by `spoil` (a verdict the
    theorems say never happens: the CLI's handling of it is what is tested)."""
    import importlib

    mod = importlib.import_module(module)
    real = getattr(mod, name)
    monkeypatch.setattr(mod, name, lambda *a, **k: spoil(real(*a, **k)))


def _spoil_certificate(result):
    return replace(result, certificate=replace(result.certificate, certified=False, errors=1))


@pytest.mark.parametrize(
    "command, argv, verdict, module, name, spoil",
    [
        (
            "minmax certify",
            ["--M", "8", "--n", "4", "--heads", "2"],
            lambda j: j["errors_min"] == 0 and j["errors_max"] == 0,
            "headcount.minmax.certification",
            "certify_minmax",
            lambda cert: replace(cert, errors_max=None),  # as when a sufficient condition fails
        ),
        (
            "boolean construct",
            ["--function", "xor", "--n", "6", "--degree", "2", "--heads", "3"],
            lambda j: j["certified"],
            "headcount.boolean.certification",
            "construct_and_certify",
            _spoil_certificate,
        ),
        (
            "boolean frontier",
            ["--function", "xor", "--n", "6", "--degree", "2", "--heads", "2"],
            lambda j: j["certified"],
            "headcount.boolean.accuracy_frontier",
            "accuracy_frontier",
            lambda result: replace(result, model=replace(result.model, certified=False)),
        ),
    ],
)
def test_require_certified_on_constructions(
    capsys, monkeypatch, command, argv, verdict, module, name, spoil
):
    """The constructions are certified (exit 0 with the flag); a certificate that does not hold —
    which the theorems rule out, so it is made here — exits 3 with the flag and 0 without."""
    code, result, _ = _json_run(capsys, *command.split(), *argv, "--require-certified")
    assert code == 0 and verdict(result) is True
    _not_certified(monkeypatch, module, name, spoil)
    code, plain, _ = _json_run(capsys, *command.split(), *argv)
    assert code == 0 and verdict(plain) is False
    code, result, err = _json_run(capsys, *command.split(), *argv, "--require-certified")
    assert code == 3 and err == "" and verdict(result) is False


def test_frontier_require_certified_needs_a_model(capsys):
    refused(
        capsys,
        *("boolean", "frontier", "--function", "xor", "--n", "6", "--require-certified"),
        needles=("--require-certified needs --degree and --heads",),
    )


CERTIFYING = [
    ("induction", "certify"),
    ("minmax", "certify"),
    ("minmax", "verify"),
    ("boolean", "construct"),
    ("boolean", "check"),
    ("boolean", "frontier"),
]


def _help(capsys, *command: str) -> str:
    code, out, _ = run(capsys, *command, "--help")
    assert code == 0
    return " ".join(out.replace("│", " ").split())


@pytest.mark.parametrize("command", CERTIFYING)
def test_help_documents_exit_3(capsys, command):
    text = _help(capsys, *command)
    assert "--require-certified" in text and "exit 3" in text, command


def test_top_level_help_lists_the_exit_codes(capsys):
    assert "3 not certified (with --require-certified)" in _help(capsys)


# ---------------------------------------------------------------------------------------------
# One spelling per idea: --random-model SEED (a seeded random model), --degree (D)
# ---------------------------------------------------------------------------------------------

RENAMED = [
    (
        [
            "induction",
            "protocol",
            "--k",
            "3",
            "--heads",
            "1",
            "--dim",
            "2",
            "--precision-bits",
            "6",
        ],
        "--random-seed",
        "--random-model",
        "0",
    ),
    (
        ["induction", "refute", "--k", "3", "--heads", "1", "--dim", "2", "--precision-bits", "4"],
        "--random-seed",
        "--random-model",
        "0",
    ),
    (
        ["minmax", "verify", "--M", "8", "--n", "4", "--dim", "2"],
        "--random-seed",
        "--random-model",
        "0",
    ),
    (["boolean", "stamps", "--size", "3"], "--summands", "--degree", "2"),
]


@pytest.mark.parametrize("argv, old, new, value", RENAMED)
def test_the_new_spelling_works_and_the_old_is_a_noted_alias(capsys, argv, old, new, value):
    code, by_new, err = _json_run(capsys, *argv, new, value)
    assert code == 0 and err == ""
    code, by_old, err = _json_run(capsys, *argv, old, value)
    assert code == 0 and _timeless(by_old) == _timeless(by_new)
    assert err == f"headcount: {old} is deprecated; use {new}\n"
    text = _help(capsys, *argv[:2])
    assert new in text and old not in text  # hidden


@pytest.mark.parametrize("argv, old, new, value", RENAMED)
def test_old_and_new_spelling_together_are_refused(capsys, argv, old, new, value):
    refused(capsys, *argv, new, value, old, value, needles=(f"give only {new}",))


def test_a_refusal_after_the_old_spelling_stays_one_line(capsys):
    line = refused(
        capsys,
        *("minmax", "verify", "--M", "8", "--n", "4", "--dim", "2", "--random-seed", "-1"),
    )
    assert line.startswith("error: --random-model must be an integer ≥ 0, got -1")
    assert "--random-seed is deprecated; use --random-model" in line


def test_stamps_still_needs_its_degree(capsys):
    refused(capsys, "boolean", "stamps", "--size", "3", needles=("Missing option '--degree'",))


def test_library_parameters_are_spelled_as_the_new_flags(capsys):
    refused(
        capsys,
        *("induction", "refute", "--k", "3", "--heads", "1", "--dim", "2"),
        needles=("--random-model",),
    )
    refused(capsys, "boolean", "stamps", "--degree", "3", "--size", "9", needles=("--degree",))


# ---------------------------------------------------------------------------------------------
# The same default for the same option: evaluate, analyze heads, analyze patterns
# ---------------------------------------------------------------------------------------------


def _defaults(*path: str) -> dict[str, object]:
    command = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]
    return {opt: p.default for p in command.params for opt in p.opts}


def test_shared_task_options_have_one_default():
    commands = [("evaluate",), ("analyze", "heads"), ("analyze", "patterns")]
    defaults = [_defaults(*c) for c in commands]
    for option, want in (("--task", "induction"), ("--n", 16), ("--alphabet", 4)):
        assert [d[option] for d in defaults] == [want] * len(commands), option


def test_evaluate_and_analyze_heads_read_the_same_task_by_default(capsys, tmp_path):
    model = tmp_path / "two.safetensors"
    code, _, err = _json_run(
        capsys,
        *("induction", "construct", "--layers", "2", "--n", "16", "--alphabet", "4"),
        *("--out", str(model)),
    )
    assert code == 0, err
    code, evaluated, err = _json_run(capsys, "evaluate", "--model", str(model), "--samples", "32")
    assert code == 0, err
    assert (evaluated["task"], evaluated["layout"], evaluated["n"], evaluated["alphabet"]) == (
        "induction",
        "plain",
        16,
        4,
    )
    assert evaluated["per_hop"][0]["error"] == 0  # the construction: right on every input
    code, analyzed, err = _json_run(
        capsys, "analyze", "heads", "--model", str(model), "--samples", "32"
    )
    assert code == 0, err
    assert (analyzed["task"], analyzed["n"], analyzed["alphabet"]) == ("induction", 16, 4)


# ---------------------------------------------------------------------------------------------
# examples/sweep.toml: a real sweep file
# ---------------------------------------------------------------------------------------------


def test_the_example_sweep_file_is_a_small_real_sweep():
    from headcount.cli.sweep_options import spec_from_options
    from headcount.learn.sweep import spec_from_toml

    path = ROOT / "examples" / "sweep.toml"
    spec = spec_from_toml(path)
    assert spec_from_options(path) == spec  # what `headcount sweep run examples/sweep.toml` reads
    assert (spec.name, spec.task, spec.seeds) == ("xor-phase-example", "boolean", (0, 1))
    runs = spec.runs()
    assert len(runs) == 12 == len({r.run_id for r in runs})
    assert runs[0].config == {
        "task": "boolean",
        "function": "xor",
        "n": 4,
        "steps": 1000,
        "degree": 1,
        "heads": 1,
        "seed": 0,
    }
    assert {(r.config["degree"], r.config["heads"]) for r in runs} == {
        (d, h) for d in (1, 2) for h in (1, 2, 4)
    }
    readme = (ROOT / "README.md").read_text()
    assert "headcount sweep run examples/sweep.toml --db results.sqlite" in readme


def test_a_commands_own_exit_code_reaches_the_shell(capsys, monkeypatch):
    """typer.Exit(code) comes back from the app as a return value: main() exits with it (reproduce
    exits 1 when a claim fails; it used to exit 0)."""
    from types import SimpleNamespace

    import headcount.report.reproduce as reproduce

    summary = SimpleNamespace(
        claims=[], passed=0, failed=1, wall_seconds=0.0, out_dir="r", to_json=lambda: {"failed": 1}
    )
    monkeypatch.setattr(reproduce, "run_reproduce", lambda **kwargs: summary)
    code, out, _ = run(capsys, "reproduce", "--json")
    assert code == 1 and json.loads(out) == {"failed": 1}
