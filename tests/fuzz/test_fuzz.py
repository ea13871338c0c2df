"""The fuzz suite: the quick subset (every command × a sample of values, the combinations, 40 files)
runs with the default tests; the full set (every option × every value, ≥ 200 files, every broken
database and sweep file) is `slow`. Each test collects every failure and reports them grouped by
command and kind."""

from __future__ import annotations

import os
import pickle
import random
import signal
import sys

import pytest

from tests.fuzz import combos, harness, options, stores
from tests.fuzz.files import model_file_cases
from tests.fuzz.harness import Case, Outcome, judge

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="fork + RLIMIT_AS: Linux only"
)

QUICK_VALUES = 2  # values per (command, option) in the quick subset
QUICK_FILES = 40
QUICK_GPT2_FILES = 10


def _files(fixtures) -> list[Case]:
    return (
        model_file_cases(fixtures) + stores.db_cases(fixtures) + stores.sweep_file_cases(fixtures)
    )


def _bases(fixtures) -> tuple[str, str | None]:
    db = fixtures.results_db
    return str(fixtures.models["boolean"]), None if db is None else str(db)


def _models(fixtures) -> dict[str, str]:
    return {kind: str(path) for kind, path in fixtures.models.items()}


@pytest.fixture(scope="session")
def hf_files(fuzz_fixtures) -> dict[str, str]:
    """Llama checkpoints for `import hf` (under the fuzz root, readable by `nobody`): "folder" a
    valid one, the rest hostile (tests.interop.hf_checkpoints.hostile_hf_folders)."""
    from tests.interop.hf_checkpoints import (
        hostile_hf_folders,
        llama_config,
        llama_state,
        write_hf_folder,
    )

    root = fuzz_fixtures.root / "hf"
    folder = write_hf_folder(root / "ok", llama_state(llama_config()), llama_config())
    hostile = hostile_hf_folders(root / "hostile")
    for path in root.rglob("*"):
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    return {"folder": str(folder)} | {label: str(path) for label, path in hostile.items()}


@pytest.fixture(scope="session")
def gpt2_files(fuzz_fixtures) -> dict[str, str]:
    """GPT-2 checkpoints for `import gpt2` (under the fuzz root, readable by `nobody`): a valid
    folder, a bare state dict, configs, a vocabulary map beyond the vocabulary, payloads that create
    `marker` if unpickled, and a 16 GiB sparse wte."""
    import torch

    from tests.core.gpt2_checkpoints import (
        Payload,
        config,
        state_dict,
        write_folder,
        write_json,
        write_key_bombs,
    )
    from tests.fuzz.safetensors_raw import sparse_tensor_file

    root = fuzz_fixtures.root / "gpt2"
    folder = write_folder(root / "ckpt", state_dict(), config())
    marker, tensors = (
        str(root / "MARKER"),
        {k: torch.from_numpy(v) for k, v in state_dict().items()},
    )
    torch.save(Payload(marker), root / "payload.pt")
    torch.save(tensors | {"h.0.attn.bias": Payload(marker)}, root / "payload-dict.bin")
    (root / "payload-pickle.bin").write_bytes(pickle.dumps(Payload(marker)))
    blob = (folder / "model.safetensors").read_bytes()
    sparse_tensor_file(root / "sparse.safetensors", blob, "wte.weight", [2**28, 8])
    bombs = write_key_bombs(
        root / "bombs"
    )  # dict keys torch.load would hash to a segfault or a hang
    for path in root.rglob("*"):
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    return {
        "folder": str(folder),
        "bare": str(folder / "model.safetensors"),
        "config": str(folder / "config.json"),
        "config_n_layer": str(write_json(root / "n_layer.json", config(n_layer=7))),
        "vocab_map": str(write_json(root / "map.json", {"symbols": [0, 1, 5000]})),
        "payload_pt": str(root / "payload.pt"),
        "payload_dict": str(root / "payload-dict.bin"),
        "payload_pickle": str(root / "payload-pickle.bin"),
        "sparse_wte": str(root / "sparse.safetensors"),
        "marker": marker,
    } | {f"key_bomb_{label}": str(path) for label, path in bombs.items()}


def _gpt2_file_cases(fixtures, gpt2: dict[str, str]) -> list[Case]:
    """Every corrupt or malicious transformer file of the file fuzzer as `import gpt2 PATH --config
    …`: none is a GPT-2 checkpoint, so each must be refused (and no payload run)."""
    cases = []
    for case in model_file_cases(fixtures):
        if case.command == "induction predict":
            path = case.argv[case.argv.index("--model") + 1]
            memory = ("--max-memory", harness.MAX_MEMORY) if "--max-memory" in case.argv else ()
            argv = (
                "import",
                "gpt2",
                path,
                "--config",
                gpt2["config"],
                "--out",
                "g.safetensors",
                "--json",
            )
            cases.append(
                Case(
                    "import",
                    "import gpt2",
                    "PATH",
                    case.value,
                    (*argv, *memory),
                    kind="model-file",
                    valid_ok=False,
                    markers=case.markers,
                    forbidden=case.forbidden,
                )
            )
    for key in sorted(
        k for k in gpt2 if k.startswith("key_bomb_")
    ):  # the pickle scan's two recipes
        argv = (
            "import",
            "gpt2",
            gpt2[key],
            "--config",
            gpt2["config"],
            "--out",
            "g.safetensors",
            "--json",
        )
        cases.append(
            Case("import", "import gpt2", "PATH", key, argv, kind="model-file", valid_ok=False)
        )
    return cases


# --- the harness itself
# ------------------------------------------------------------------------------


def _case(**kw) -> Case:
    return Case("g", "g c", "--x", "v", ("g", "c", "--json"), **kw)


@pytest.mark.parametrize(
    ("outcome", "verdict"),
    [
        (Outcome(code=2, stderr="error: n must be ≥ 1\n"), "refused"),
        (Outcome(code=2, stderr="error: one\nerror: two\n"), "stderr-lines"),
        (
            Outcome(code=2, stderr="Traceback (most recent call last):\n  x\nValueError: y\n"),
            "traceback",
        ),
        (
            Outcome(code=1, stderr="internal error (a bug in headcount …): KeyError: 'x'\n"),
            "internal-error",
        ),
        (Outcome(code=0, stdout='{"a": 1}\n', one_json_object=True), "passed"),
        (Outcome(code=0, stdout="{} {}\n"), "json"),
        (Outcome(timed_out=True), "hang"),
        (
            Outcome(signal=signal.SIGXCPU, cpu_s=10.0, cpu_budget_s=10.0),
            "hang",
        ),  # RLIMIT_CPU's soft limit
        (Outcome(signal=9, cpu_s=15.0, cpu_budget_s=10.0), "hang"),  # its hard limit
        (
            Outcome(code=0, one_json_object=True, cpu_s=0.2, cpu_budget_s=0.0),
            "hang",
        ),  # over, unkilled
        (Outcome(signal=9, cpu_s=1.0, cpu_budget_s=10.0), "memory"),
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
    assert [judge(c, o)[0] for c, o in zip(cases, harness.run_cases(cases))] == [
        "code-execution"
    ] * 2
    monkeypatch.setenv(
        "HEADCOUNT_FUZZ_CAP_MARGIN", "0"
    )  # no room above the zygote: any allocation fails
    plain = Case("induction", "induction solve", "-", "capped", solve)
    (capped,) = harness.run_cases([plain])
    # how an allocation fails with no room at all depends on where it happens (a MemoryError, or an
    # import that fails with one inside): the cap must have stopped the command, whichever way it
    # surfaces
    assert judge(plain, capped)[0] in ("memory", "crash", "internal-error", "traceback")


# --- the fuzz sets
# ------------------------------------------------------------------------------------


def _assert_clean(cases: list[Case], title: str) -> None:
    report = harness.check(cases, title)
    if report.failures:
        pytest.fail(report.describe(), pytrace=False)


def test_quick_fuzz_subset(fuzz_fixtures, gpt2_files, hf_files):
    """Every (command, option) with QUICK_VALUES seeded values, every combination, a sample of the
    --max-memory values and QUICK_FILES files (models, databases, sweep files), and QUICK_GPT2_FILES
    model files given to `import gpt2`."""
    rng = random.Random(13)
    cases = options.option_cases(
        *_bases(fuzz_fixtures),
        sample=QUICK_VALUES,
        gpt2=gpt2_files["folder"],
        hf=hf_files["folder"],
    )
    cases += combos.combo_cases(_models(fuzz_fixtures))
    cases += rng.sample(options.max_memory_cases(), 6)
    cases += rng.sample(_files(fuzz_fixtures), QUICK_FILES)
    cases += combos.import_combo_cases(_models(fuzz_fixtures), gpt2_files)
    cases += combos.hf_import_cases({k: v for k, v in hf_files.items() if k != "folder"})
    gpt2_cases = _gpt2_file_cases(fuzz_fixtures, gpt2_files)
    cases += rng.sample(gpt2_cases, QUICK_GPT2_FILES)
    cases += [
        c for c in gpt2_cases if c.value.startswith("key_bomb_")
    ]  # issue 28's recipes: every time
    _assert_clean(cases, "quick")


@pytest.mark.slow
def test_full_fuzz_options(fuzz_fixtures, gpt2_files, hf_files):
    """Every option of every command × every hostile value of its kind (≥ 1,500 cases)."""
    cases = options.option_cases(
        *_bases(fuzz_fixtures), gpt2=gpt2_files["folder"], hf=hf_files["folder"]
    )
    cases += combos.combo_cases(_models(fuzz_fixtures)) + options.max_memory_cases()
    cases += combos.import_combo_cases(_models(fuzz_fixtures), gpt2_files)
    cases += combos.hf_import_cases({k: v for k, v in hf_files.items() if k != "folder"})
    assert len(cases) >= 1500
    _assert_clean(cases, "options")


@pytest.mark.slow
def test_full_fuzz_files(fuzz_fixtures, gpt2_files):
    """Every corrupt or malicious model file for every --model command (and as `import gpt2 PATH`),
    every broken database for every --db command, every hostile sweep file (≥ 200 cases)."""
    cases = _files(fuzz_fixtures) + _gpt2_file_cases(fuzz_fixtures, gpt2_files)
    assert len(cases) >= 200
    _assert_clean(cases, "files")
