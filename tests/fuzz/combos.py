"""Contradictory or inconsistent combinations of options, and inputs that are large in several
options at once (200k-token inputs, brute force at M = 10^6, …): each command's mistakes a careless
user makes."""

from __future__ import annotations

from tests.fuzz.harness import MAX_MEMORY, Case


def combo_cases(fixtures_models: dict[str, str]) -> list[Case]:
    """Contradictory or inconsistent combinations of options (each must be refused)."""
    t, table, mm = (
        fixtures_models["transformer"],
        fixtures_models["table"],
        fixtures_models["minmax"],
    )
    tokens = "0 1 " * 100_000
    combos = {
        "induction predict": [
            ("--model and --layers", ["--input", "0 1 0 1", "--model", t, "--layers", "2"]),
            ("neither --model nor --layers", ["--input", "0 1 0 1"]),
            ("--layers 3", ["--input", "0 1 0 1", "--layers", "3"]),
            (
                "input longer than --n",
                ["--input", "0 1 0 1", "--layers", "2", "--n", "2", "--alphabet", "2"],
            ),
            (
                "token ≥ --alphabet",
                ["--input", "0 5 0 1", "--layers", "2", "--n", "4", "--alphabet", "2"],
            ),
            ("token ≥ the file's alphabet", ["--input", "0 7 0 1", "--model", t]),
            ("input longer than the file's n", ["--input", "0 1 " * 50, "--model", t]),
            ("200k tokens, --layers 2", ["--input", tokens, "--layers", "2"]),
            ("200k tokens, --layers 1", ["--input", tokens, "--layers", "1"]),
            (
                "a table file with fixed:10000",
                ["--input", "0 1 2 0 1", "--model", table, "--precision", "fixed:10000"],
            ),
        ],
        "induction solve": [
            ("200k tokens, --hops 10^9", ["--input", tokens, "--hops", "1000000000"]),
            ("200k tokens of 2^62", ["--input", f"{2**62} " * 200_000]),
            ("200k distinct tokens", ["--input", " ".join(str(i) for i in range(200_000))]),
        ],
        "induction certify": [
            (
                "--model and --layers",
                ["--model", t, "--layers", "2", "--n", "4", "--alphabet", "2"],
            ),
            ("neither --model nor --layers", ["--n", "4", "--alphabet", "2"]),
            ("--alphabet > --n with --layers 2", ["--layers", "2", "--n", "4", "--alphabet", "9"]),
            ("--n beyond the file's", ["--model", t, "--n", "1000", "--alphabet", "2"]),
            (
                "--samples with an exhaustive size",
                ["--layers", "2", "--n", "4", "--alphabet", "2", "--samples", "1000000000"],
            ),
            (
                "--layout hop-prefix on a construction without hop tokens",
                ["--layers", "2", "--n", "4", "--alphabet", "2", "--layout", "hop-prefix"],
            ),
            (
                "--hops 17 and --layout hop-prefix",
                [
                    "--model",
                    t,
                    "--n",
                    "3",
                    "--alphabet",
                    "2",
                    "--hops",
                    "17",
                    "--layout",
                    "hop-prefix",
                ],
            ),
        ],
        "evaluate": [
            (
                "--task induction and --hops 2",
                ["--model", t, "--task", "induction", "--hops", "2", *EV],
            ),
            (
                "--n beyond the file's context (hop-prefix)",
                ["--model", t, "--layout", "hop-prefix", *EV],
            ),
            (
                "--hops 1..3 beyond the file's hop tokens",
                ["--model", t, "--task", "khop", "--hops", "1..3", "--n", "3", "--alphabet", "2"],
            ),
            (
                "--alphabet beyond the file's symbols",
                ["--model", t, "--task", "induction", "--n", "4", "--alphabet", "3"],
            ),
            (
                "a table file",
                ["--model", table, "--task", "induction", "--n", "4", "--alphabet", "2"],
            ),
            (
                "a minmax file",
                ["--model", mm, "--task", "induction", "--n", "4", "--alphabet", "2"],
            ),
            (
                "10^9 samples at 16 hop counts",
                [
                    "--model",
                    t,
                    "--layout",
                    "plain",
                    "--hops",
                    "1..16",
                    *EV,
                    "--samples",
                    "1000000000",
                ],
            ),
        ],
        "induction protocol": [
            (
                "--model and --random-model",
                ["--k", "2", "--model", table, "--random-model", "0", "--precision-bits", "8"],
            ),
            ("neither --model nor --random-model", ["--k", "2", "--precision-bits", "8"]),
            (
                "--heads without --random-model",
                ["--k", "2", "--model", table, "--heads", "3", "--precision-bits", "8"],
            ),
            ("a transformer file", ["--k", "2", "--model", t, "--precision-bits", "8"]),
            ("--k not matching the file", ["--k", "9", "--model", table, "--precision-bits", "8"]),
            (
                "--pairs 10^12 with k = 40",
                [*_rnd("40"), "--precision-bits", "8", "--pairs", "1000000000000"],
            ),
        ],
        "induction refute": [
            ("--model and --random-model", ["--k", "2", "--model", table, "--random-model", "0"]),
            ("neither --model nor --random-model", ["--k", "2"]),
            ("a minmax file", ["--k", "2", "--model", mm]),
            ("--k 10^5 with a random model", [*_rnd("100000")]),
        ],
        "minmax verify": [
            (
                "--model and --random-model",
                ["--M", "4", "--n", "3", "--model", mm, "--random-model", "0", "--dim", "2"],
            ),
            ("neither --model nor --random-model", ["--M", "4", "--n", "3"]),
            ("--random-model without --dim", ["--M", "4", "--n", "3", "--random-model", "0"]),
            ("--M not the file's", ["--M", "9", "--n", "3", "--model", mm]),
            (
                "brute force at M = 10^6",
                [
                    "--M",
                    "1000000",
                    "--n",
                    "50",
                    "--random-model",
                    "0",
                    "--dim",
                    "2",
                    "--method",
                    "brute",
                ],
            ),
            ("a boolean file", ["--M", "4", "--n", "3", "--model", fixtures_models["boolean"]]),
        ],
        "minmax certify": [
            (
                "brute-force at M = 10^4",
                ["--M", "10000", "--n", "40", "--heads", "2", "--method", "brute-force"],
            ),
            (
                "exact-histogram at M = 10^6",
                ["--M", "1000000", "--n", "4", "--heads", "2", "--method", "exact-histogram"],
            ),
        ],
        "boolean threshold-degree": [
            (
                "--function and --truth-table",
                ["--function", "xor", "--n", "2", "--truth-table", "0110"],
            ),
            ("neither", []),
            ("--function without --n", ["--function", "xor"]),
            ("F:… of 100k signs without --n", ["--function", "F:" + "+-" * 50_000]),
            ("--truth-table and --n", ["--truth-table", "0110", "--n", "5"]),
        ],
        "boolean construct": [
            (
                "D·H below the threshold degree",
                ["--function", "xor", "--n", "4", "--degree", "1", "--heads", "1"],
            ),
            (
                "F:… length not n + 1",
                ["--function", "F:+-+", "--n", "9", "--degree", "2", "--heads", "2"],
            ),
        ],
        "boolean frontier": [
            ("--degree without --heads", ["--function", "xor", "--n", "4", "--degree", "2"]),
            (
                "--out without --degree, --heads",
                ["--function", "xor", "--n", "4", "--out", "m.safetensors"],
            ),
            ("xor beyond the work bound", ["--function", "xor", "--n", "3000"]),
            ("F:… length not n + 1", ["--function", "F:+-+", "--n", "9"]),
        ],
        "boolean check": [
            (
                "--n beyond the file",
                ["--model", fixtures_models["boolean"], "--function", "xor", "--n", "1000000000"],
            ),
            ("a transformer file", ["--model", t, "--function", "xor"]),
        ],
        "sweep run": [
            (
                "a file and --task",
                [fixtures_models["boolean"], "--db", "r.sqlite", "--task", "boolean"],
            ),
            (
                "a file and --seeds ''",
                [fixtures_models["boolean"], "--db", "r.sqlite", "--seeds", ""],
            ),
            ("--grid without --task", ["--db", "r.sqlite", "--grid", "n=2,3"]),
            ("a key both --fixed and --grid", [*SWEEP_TINY, "--grid", "n=2,3"]),
            (
                "--address with --backend local",
                [*SWEEP_TINY, "--backend", "local", "--address", "x"],
            ),
            ("--address without --backend (local)", [*SWEEP_TINY, "--address", "x"]),
            ("--seeds ',' names no seed", [*SWEEP_TINY, "--seeds", ","]),
            ("neither a file nor --task", ["--db", "r.sqlite"]),
            ("--workers 10^6", [*SWEEP_TINY, "--workers", "1000000"]),
        ],
        "train induction": [
            ("--hops beyond --n", ["--hops", "100", "--n", "4", "--steps", "2"]),
            ("--alphabet 10^6", ["--alphabet", "1000000", "--steps", "2"]),
            (
                "--positional circle with odd --dim",
                ["--positional", "circle", "--dim", "3", "--steps", "2"],
            ),
        ],
        "train boolean": [
            ("--dim 10^6", ["--dim", "1000000", "--steps", "2"]),
            ("--n 64", ["--n", "64", "--steps", "2"]),
        ],
    }
    cases = []
    for command, items in combos.items():
        for lab, args in items:
            argv = (*command.split(), *args, "--json", "--max-memory", MAX_MEMORY)
            refuse = any(word in lab for word in REFUSE_WORDS)
            cases.append(
                Case(
                    command.split()[0],
                    command,
                    "combo",
                    lab,
                    argv,
                    kind="combo",
                    valid_ok=not refuse,
                )
            )
    return cases


def import_combo_cases(models: dict[str, str], gpt2: dict[str, str]) -> list[Case]:
    """`import gpt2` with checkpoints that must be refused (gpt2: the files test_fuzz.gpt2_files
    makes; a payload's marker file must never appear) and mistakes in combining options."""
    folder, bare, cfg, out = (
        gpt2["folder"],
        gpt2["bare"],
        gpt2["config"],
        ["--out", "g.safetensors"],
    )
    items = [
        ("a bare state dict without --config", [bare, *out]),
        ("--readout lm-head without lm_head.weight", [folder, "--readout", "lm-head", *out]),
        ("--prefix not matching the file", [folder, "--prefix", "transformer.", *out]),
        (
            "--config not matching the file (n_layer)",
            [bare, "--config", gpt2["config_n_layer"], *out],
        ),
        (
            "--vocab-map ids beyond the file's vocabulary",
            [folder, "--vocab-map", gpt2["vocab_map"], *out],
        ),
        ("a transformer file with --config", [models["transformer"], "--config", cfg, *out]),
        ("a torch.save payload (.pt)", [gpt2["payload_pt"], "--config", cfg, *out]),
        ("a payload inside a state dict (.bin)", [gpt2["payload_dict"], "--config", cfg, *out]),
        ("a bare pickle payload (.bin)", [gpt2["payload_pickle"], "--config", cfg, *out]),
        ("wte 16 GiB sparse", [gpt2["sparse_wte"], "--config", cfg, *out]),
    ]
    return [
        Case(
            "import",
            "import gpt2",
            "combo",
            lab,
            ("import", "gpt2", *args, "--json", "--max-memory", MAX_MEMORY),
            kind="combo",
            valid_ok=False,
            markers=(gpt2["marker"],),
        )
        for lab, args in items
    ]


def hf_import_cases(folders: dict[str, str]) -> list[Case]:
    """`import hf` with the hostile Llama checkpoints of tests.interop.hf_checkpoints (absurd θ,
    key/value heads not dividing the heads, missing, extra or mis-shaped tensors, NaN weights, an
    unknown family, absurd layer counts): each refused in one line."""
    return [
        Case(
            "import",
            "import hf",
            "combo",
            label,
            ("import", "hf", path, "--out", "h.safetensors", "--json", "--max-memory", MAX_MEMORY),
            kind="combo",
            valid_ok=False,
        )
        for label, path in folders.items()
    ]


EV = [
    "--n",
    "4",
    "--alphabet",
    "2",
]  # evaluate's sizes on the two-layer construction file (n = 4, S = 2)
# a sweep of one Boolean run (the default seed) of one step, options.TINY: should a combination be
# accepted, it trains no more than that
SWEEP_TINY = ["--db", "r.sqlite", "--task", "boolean", "--fixed", "n=2", "--fixed", "degree=1"]
SWEEP_TINY += ["--fixed", "heads=1", "--fixed", "steps=1"]


# combinations that are contradictions or mistakes (the rest may be valid: a quick answer is right
# too)
REFUSE_WORDS = (
    " and ",
    "neither",
    "without",
    "not matching",
    "not the file",
    "a transformer file",
    "a minmax file",
)
REFUSE_WORDS += (
    "a boolean file",
    "--layers 3",
    "token ≥",
    "longer than",
    "length not",
    "below the threshold",
)
REFUSE_WORDS += (
    "a file and",
    "beyond the file",
    "both --fixed",
    "with --backend local",
    "names no seed",
)


def _rnd(k: str) -> list[str]:
    return ["--k", k, "--random-model", "0", "--heads", "1", "--dim", "2"]
