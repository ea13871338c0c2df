"""Option cases: every option of every command, each hostile value substituted into a valid, fast
command (`commands()`: the base each command starts from; combinations of options are in combos.py).

    option_cases(model, db)             # the full set: every (command, option, value)
    option_cases(model, db, sample=2)   # the quick set: every (command, option) with 2 values
    (seeded)

Every case passes --max-memory 1G so the guard, not the OS, refuses; integer options also run 10^12
without it (the default limit: half this machine's memory must refuse it too)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

from tests.fuzz import values as V
from tests.fuzz.harness import MAX_MEMORY, Case, label

Values = list[tuple[str, str]]
NO_MAX_MEMORY = {
    "'1000000000000'"
}  # the int values also run without --max-memory (the default limit)


@dataclass(frozen=True)
class Command:
    """A command, a valid and fast base (option → value; a key starting with '#' is a positional
    argument), the values to try per option, options tried against another base (`alone`), and
    repeated options whose value is added to the base's list instead of replacing it (`extend`)."""

    name: str
    base: dict[str, str | list[str]]
    options: dict[str, Values]
    alone: dict[str, dict[str, str]] = field(default_factory=dict)
    extend: tuple[str, ...] = ()

    @property
    def group(self) -> str:
        return self.name.split()[0]

    def argv(self, args: dict[str, str | list[str]], max_memory: bool = True) -> tuple[str, ...]:
        out = self.name.split()
        for key, value in args.items():
            for item in [value] if isinstance(value, str) else value:  # a list: a repeated option
                out.extend([item] if key.startswith("#") else [key, item])
        return (*out, "--json", *(("--max-memory", MAX_MEMORY) if max_memory else ()))


M1 = {"--input": "0 1 0 1"}
RANDOM_INDEX = {"--k": "2", "--random-model": "0", "--heads": "1", "--dim": "2"}
# One Boolean run of one training step: a `sweep run` case the CLI accepts trains one such run (no
# --seeds or --grid value of values.py is valid and more than one run), in a spawned worker that
# imports torch.
TINY = ["n=2", "degree=1", "heads=1", "steps=1"]
SWEEP = {"--db": "r.sqlite", "--task": "boolean", "--fixed": TINY, "--seeds": "0", "--workers": "1"}
EXPERIMENT = {"#name": "xor-phase", "--scale": "quick", "--db": "r.sqlite", "--workers": "1"}
EVALUATE = {"--task": "induction", "--n": "4", "--alphabet": "2", "--samples": "8"}
PATTERNS = {
    "--out": "patterns",
    "--n": "4",
    "--alphabet": "2",
    "--samples": "8",
}  # analyze patterns


def _transformer(boolean_model: str) -> str:
    """The two-layer construction (n = 4, S = 2) the fixtures write beside the Boolean model."""
    return str(Path(boolean_model).with_name("transformer.safetensors"))


def _minmax(boolean_model: str) -> str:
    """The one-head min/max construction (M = 4, n = 3) the fixtures write beside the Boolean
    model."""
    return str(Path(boolean_model).with_name("minmax.safetensors"))


def _tl_export(boolean_model: str) -> str:
    """That construction as a TransformerLens export folder (`export transformer-lens`, made by
    Fixtures)."""
    return str(Path(boolean_model).with_name("transformer-tl"))


# `experiment` trains a whole experiment (minutes) when its input is valid, so it gets only values
# that must be refused: no name a new database may have, no worker count that could be a real one.
NEW_DB_NAMES = {"missing", "newline in name", "300-char name"}


def _positive_int(text: str) -> bool:
    try:
        return int(text) >= 1
    except ValueError:
        return False


def _choice(*extra: str) -> Values:
    return V.STR + [(label(v), v) for v in extra]


def commands(
    boolean_model: str, results_db: str | None, gpt2: str | None = None, hf: str | None = None
) -> list[Command]:
    """The command table; `boolean_model` is the valid file `boolean check` starts from,
    `results_db` a database with runs of experiment "e" (`sweep table`), `gpt2` a GPT-2 checkpoint
    folder (`import gpt2`; None: that command is left out), `hf` a Llama checkpoint folder
    (`import hf`; likewise)."""
    return [
        Command(
            "induction solve",
            {"--input": "0 1 0 1", "--hops": "1"},
            {"--input": V.TOKENS, "--hops": V.INT},
        ),
        Command(
            "induction construct",
            {"--layers": "1", "--n": "4", "--alphabet": "2", "--out": "m.safetensors"},
            {"--layers": V.INT, "--n": V.INT, "--alphabet": V.INT, "--out": V.WRITE_PATHS},
        ),
        Command(
            "induction construct",
            {"--hops": "3", "--n": "6", "--alphabet": "2", "--out": "k.safetensors"},
            {
                "--hops": V.INT,
                "--layers": V.INT,
                "--n": V.INT,
                "--alphabet": V.INT,
                "--out": V.WRITE_PATHS,
                "--layout": _choice("Plain", "hop_prefix", "hop-prefix", "plain"),
                "--max-hops": V.INT,
                "--depth": _choice("Floor", "floor ", "round", "ceil", "floor"),
            },
            alone={
                "--max-hops": {
                    "--layout": "hop-prefix",
                    "--n": "6",
                    "--alphabet": "2",
                    "--out": "v.safetensors",
                }
            },
        ),
        Command(
            "induction predict",
            {
                "--input": "0 1 0 1",
                "--layers": "2",
                "--n": "4",
                "--alphabet": "2",
                "--precision": "float64",
            },
            {
                "--input": V.TOKENS,
                "--model": V.READ_PATHS,
                "--layers": V.INT,
                "--n": V.INT,
                "--alphabet": V.INT,
                "--precision": V.PRECISION,
            },
            alone={"--model": M1},
        ),
        Command(
            "induction certify",
            {"--layers": "2", "--n": "4", "--alphabet": "2", "--seed": "0"},
            {
                "--model": V.READ_PATHS,
                "--layers": V.INT,
                "--n": V.INT,
                "--alphabet": V.INT,
                "--samples": V.INT,
                "--max-work": V.FLOAT,
                "--seed": V.INT,
                "--hops": V.INT,
                "--layout": _choice("Plain", "hop_prefix", "hop-prefix"),
                "--backend": _choice("Torch", "torch ", "jax", "numpy", "torch"),
                "--device": _choice("CUDA", "gpu", "cuda:0", "cpu", "auto", "cuda"),
                "--checkpoint": V.READ_PATHS + V.WRITE_PATHS,
                # the Ray executor itself is left out (it starts a cluster): its near misses, and
                # the Ray-only options without it, are refused before any work
                "--executor": _choice("Ray", "ray ", "slurm", "local"),
                "--workers": V.INT,
                "--address": V.STR,
            },
            alone={
                "--model": {"--n": "4", "--alphabet": "2"},
                "--samples": {"--layers": "2", "--n": "12", "--alphabet": "4"},
            },
        ),
        Command(
            "induction certify",
            {"--hops": "2", "--layers": "auto", "--n": "4", "--alphabet": "2"},
            {
                "--layers": _choice("AUTO", " auto", "3", "4", "2", "auto2"),
                "--hops": V.INT,
                "--n": V.INT,
                "--alphabet": V.INT,
                "--layout": _choice("hop-prefix", "Plain"),
                "--depth": _choice("FLOOR", "floor", "ceil", "both", ""),
                "--model": V.READ_PATHS,
            },
        ),
        Command(
            "induction protocol",
            {**RANDOM_INDEX, "--precision-bits": "8"},
            {
                "--k": V.INT,
                "--model": V.READ_PATHS,
                "--random-model": V.INT,
                "--heads": V.INT,
                "--dim": V.INT,
                "--precision-bits": V.INT,
                "--pairs": V.INT,
                "--seed": V.INT,
            },
            alone={"--model": {"--k": "2", "--precision-bits": "8"}},
        ),
        Command(
            "induction refute",
            {**RANDOM_INDEX, "--precision-bits": "4"},
            {
                "--k": V.INT,
                "--model": V.READ_PATHS,
                "--random-model": V.INT,
                "--heads": V.INT,
                "--dim": V.INT,
                "--precision-bits": V.INT,
                "--seed": V.INT,
            },
            alone={"--model": {"--k": "2", "--precision-bits": "4"}},
        ),
        Command(
            "induction minimal",
            {"--n": "3", "--alphabet": "2"},
            {"--n": V.INT, "--alphabet": V.INT},
        ),
        Command(
            "evaluate",
            {**EVALUATE, "--model": _transformer(boolean_model)},
            {
                "--model": V.READ_PATHS,
                "--task": _choice("KHOP", "khop ", "copy"),
                "--layout": _choice("Plain", "hop_prefix", "hop-prefix"),
                "--hops": V.INT
                + [(label(v), v) for v in ("1..17", "3..1", "1...2", "0..0", "1..", "1..16")],
                "--n": V.INT,
                "--alphabet": V.INT,
                "--samples": V.INT,
                "--seed": V.INT,
                "--precision": V.PRECISION,
            },
            alone={"--model": EVALUATE},
        ),
        Command(
            "analyze heads",
            {
                "--model": _transformer(boolean_model),
                "--n": "4",
                "--alphabet": "2",
                "--samples": "8",
            },
            {
                "--model": V.READ_PATHS,
                "--task": _choice("KHOP", "khop ", "copy"),
                "--layout": _choice("Plain", "hop_prefix", "hop-prefix"),
                "--hops": V.INT,
                "--n": V.INT,
                "--alphabet": V.INT,
                "--samples": V.INT,
                "--seed": V.INT,
            },
            alone={"--model": {"--n": "4", "--alphabet": "2", "--samples": "8"}},
        ),
        Command(
            "analyze patterns",
            {**PATTERNS, "--model": _transformer(boolean_model)},
            {
                "--model": V.READ_PATHS,
                "--out": V.WRITE_PATHS,
                "--task": _choice("KHOP", "khop ", "copy"),
                "--layout": _choice("Plain", "hop_prefix", "hop-prefix"),
                "--hops": V.INT,
                "--n": V.INT,
                "--alphabet": V.INT,
                "--samples": V.INT,
                "--seed": V.INT,
            },
            alone={"--model": PATTERNS},
        ),
        Command(
            "zoo export",
            {"#name": "xor-n8", "--out": "zoo"},
            {
                "#name": _choice("XOR-N8", "xor-n8 ", "induction-2layer-n16-s4", "xor"),
                "--format": _choice("HEADCOUNT", "transformer_lens", "transformer-lens", "tl"),
                "--out": V.WRITE_PATHS,
            },
        ),
        Command(
            "minmax certify",
            {"--M": "4", "--n": "3", "--heads": "2"},
            {
                "--M": V.INT,
                "--n": V.INT,
                "--heads": V.INT,
                "--code": _choice("SIGN", "compact ", "sign,compact"),
                "--seed": V.INT,
                "--method": _choice("brute", "exact", "sufficient_condition"),
            },
        ),
        Command(
            "minmax construct",
            {"--M": "4", "--n": "3", "--heads": "2", "--out": "mm.safetensors"},
            {
                "--M": V.INT,
                "--n": V.INT,
                "--heads": V.INT,
                "--code": _choice("SIGN", "compact "),
                "--seed": V.INT,
                "--out": V.WRITE_PATHS,
            },
        ),
        Command(
            "minmax verify",
            {"--M": "4", "--n": "3", "--random-model": "0", "--dim": "2"},
            {
                "--M": V.INT,
                "--n": V.INT,
                "--model": V.READ_PATHS,
                "--random-model": V.INT,
                "--dim": V.INT,
                "--method": _choice("exact-histogram", "brute-force", "Exact"),
            },
            alone={"--model": {"--M": "4", "--n": "3"}},
        ),
        Command(
            "minmax lower-bound",
            {"--model": _minmax(boolean_model), "--n": "9"},
            {"--model": V.READ_PATHS, "--n": V.INT, "--bits": V.INT},
        ),
        Command(
            "minmax minimal",
            {"--M": "3", "--n": "3", "--d-max": "1", "--K-max": "1"},
            {
                "--M": V.INT,
                "--n": V.INT,
                "--d-max": V.INT,
                "--K-max": V.INT,
                "--db": V.READ_PATHS + V.WRITE_PATHS,
            },
        ),
        Command(
            "minmax search",
            {"--M": "4", "--n": "3", "--dim": "1", "--restarts": "1", "--steps": "5"},
            {
                "--M": V.INT,
                "--n": V.INT,
                "--dim": V.INT,
                "--restarts": V.INT,
                "--steps": V.INT,
                "--seed": V.INT,
            },
        ),
        Command(
            "boolean construct",
            {"--function": "xor", "--n": "4", "--degree": "2", "--heads": "2"},
            {
                "--function": V.FUNCTION,
                "--n": V.INT,
                "--degree": V.INT,
                "--heads": V.INT,
                "--out": V.WRITE_PATHS,
            },
        ),
        Command(
            "boolean check",
            {"--model": boolean_model, "--function": "xor"},
            {"--model": V.READ_PATHS, "--function": V.FUNCTION, "--n": V.INT},
        ),
        Command(
            "boolean minimal",
            {"--function": "xor", "--n": "4", "--degree": "2", "--heads": "2"},
            {
                "--function": V.FUNCTION,
                "--n": V.INT,
                "--degree": V.INT,
                "--heads": V.INT,
                "--grid": V.GRID,
                "--out": V.WRITE_PATHS,
                "--db": V.READ_PATHS + V.WRITE_PATHS,
            },
        ),
        Command(
            "boolean threshold-degree",
            {"--function": "xor", "--n": "4"},
            {"--function": V.FUNCTION, "--n": V.INT, "--truth-table": V.TRUTH_TABLE},
            alone={"--truth-table": {}},
        ),
        Command(
            "boolean frontier",
            {"--function": "xor", "--n": "4", "--degree": "1", "--heads": "2"},
            {
                "--function": V.FUNCTION,
                "--n": V.INT,
                "--degree": V.INT,
                "--heads": V.INT,
                "--out": V.WRITE_PATHS,
            },
        ),
        Command(
            "boolean basis",
            {"--degree": "2", "--heads": "4", "--range": "4"},
            {"--degree": V.INT, "--heads": V.INT, "--range": V.INT},
        ),
        Command(
            "boolean stamps",
            {"--degree": "2", "--size": "2"},
            {"--degree": V.INT, "--size": V.INT},
        ),
        Command(
            "train induction",
            {
                "--layers": "1",
                "--heads": "1",
                "--dim": "4",
                "--n": "4",
                "--alphabet": "2",
                "--steps": "2",
            },
            {
                "--layers": V.INT,
                "--heads": V.INT,
                "--dim": V.INT,
                "--n": V.INT,
                "--alphabet": V.INT,
                "--hops": V.INT,
                "--steps": V.INT,
                "--seed": V.INT,
                "--lr": V.FLOAT,
                "--positional": _choice("Learned", "circle ", "rotary"),
                "--activation": _choice("GELU", "gelu ", "swish"),
                "--arch": _choice("Llama", "neox ", "bert", "llama"),
                "--out": V.WRITE_PATHS,
            },
        ),
        Command(
            "train minmax",
            {"--M": "4", "--n": "2", "--steps": "2"},
            {
                "--M": V.INT,
                "--n": V.INT,
                "--heads": V.INT,
                "--dim": V.INT,
                "--steps": V.INT,
                "--seed": V.INT,
                "--lr": V.FLOAT,
                "--out": V.WRITE_PATHS,
            },
        ),
        Command(
            "train boolean",
            {"--n": "2", "--degree": "1", "--heads": "1", "--steps": "2"},
            {
                "--function": V.FUNCTION,
                "--n": V.INT,
                "--degree": V.INT,
                "--heads": V.INT,
                "--dim": V.INT,
                "--steps": V.INT,
                "--seed": V.INT,
                "--lr": V.FLOAT,
                "--out": V.WRITE_PATHS,
            },
        ),
        Command(
            "sweep run",
            SWEEP,
            {
                "#spec": V.READ_PATHS,
                "--db": V.READ_PATHS + V.WRITE_PATHS,
                "--workers": V.INT,
                "--backend": _choice("Local", "local ", "dask"),
                "--address": V.STR,
                "--name": V.STR,
                "--task": _choice("Boolean", "khop ", "sweep"),
                "--fixed": V.ITEMS,
                "--grid": V.ITEMS,
                "--seeds": V.SEEDS,
            },
            alone={"#spec": {"--db": "r.sqlite", "--workers": "1"}},
            extend=(
                "--fixed",
            ),  # a hostile entry joins TINY's: a run it leaves valid still trains one step
        ),
        Command(
            "sweep table",
            {"--db": results_db or "r.sqlite", "--experiment": "e"},
            {
                "--db": V.READ_PATHS,
                "--experiment": V.STR,
                "--format": _choice("xml", "MD", "json "),
            },
        ),
        Command(
            "experiment",
            EXPERIMENT,
            {
                "#name": _choice("xor_phase", "XOR-PHASE", "induction-depth "),
                "--scale": _choice("huge", "fast"),
                "--db": [
                    (lab, v) for lab, v in V.READ_PATHS + V.WRITE_PATHS if lab not in NEW_DB_NAMES
                ],
                "--workers": [(lab, v) for lab, v in V.INT if not _positive_int(v)],
                "--backend": _choice("dask"),
            },
        ),
        Command(
            "reproduce",
            {"--scale": "quick", "--only": "boolean.symmetric.threshold_degree", "--out": "rep"},
            {
                "--scale": _choice("Quick", "huge"),
                "--only": _choice("[", "[!", "[]", "\\"),
                "--out": V.WRITE_PATHS,
            },
        ),
        Command(
            "export transformer-lens",
            {"--model": _transformer(boolean_model), "--out": "tl"},
            {"--model": V.READ_PATHS, "--out": V.WRITE_PATHS},
        ),
        Command(
            "import transformer-lens",
            {"#path": _tl_export(boolean_model), "--out": "t.safetensors"},
            {"#path": V.READ_PATHS, "--config": V.READ_PATHS, "--out": V.WRITE_PATHS},
        ),
    ] + _import_commands(gpt2, hf)


def _import_commands(gpt2: str | None, hf: str | None = None) -> list[Command]:
    """`import gpt2` and `import hf` from valid checkpoint folders (config.json +
    model.safetensors)."""
    out = []
    if hf is not None:
        out.append(
            Command(
                "import hf",
                {"#path": hf, "--out": "h.safetensors"},
                {
                    "#path": V.READ_PATHS,
                    "--config": V.READ_PATHS,
                    "--prefix": V.STR,
                    "--readout": _choice("Tied", "lm_head", "hidden ", "lm-head"),
                    "--vocab-map": V.READ_PATHS,
                    "--n-ctx": V.INT,
                    "--out": V.WRITE_PATHS,
                },
            )
        )
    if gpt2 is None:
        return out
    return out + [
        Command(
            "import gpt2",
            {"#path": gpt2, "--out": "g.safetensors"},
            {
                "#path": V.READ_PATHS,
                "--config": V.READ_PATHS,
                "--prefix": V.STR,
                "--readout": _choice("Tied", "lm_head", "hidden ", "lm-head"),
                "--vocab-map": V.READ_PATHS,
                "--out": V.WRITE_PATHS,
            },
        )
    ]


READ_OPTIONS = (
    "--out",
    "--db",
    "#spec",
    "--model",
    "#path",
    "--config",
    "--vocab-map",
)  # paths read/written


def _case(
    cmd: Command, option: str, lab: str, value: str, args: dict[str, str], max_memory: bool
) -> Case:
    nobody = option in READ_OPTIONS and V.needs_nobody(value)
    return Case(
        cmd.group,
        cmd.name,
        option.lstrip("#") if option.startswith("#") else option,
        lab + ("" if max_memory else " (no --max-memory)"),
        cmd.argv(args, max_memory),
        as_nobody=nobody,
    )


def option_cases(
    boolean_model: str,
    results_db: str | None,
    sample: int | None = None,
    seed: int = 13,
    gpt2: str | None = None,
    hf: str | None = None,
) -> list[Case]:
    """Every (command, option, value) — or `sample` values per (command, option) — as cases (`import
    gpt2` only with a `gpt2` checkpoint folder)."""
    rng = random.Random(seed)
    cases = []
    for cmd in commands(boolean_model, results_db, gpt2, hf):
        for option, vals in cmd.options.items():
            vals = list({value: (lab, value) for lab, value in vals}.values())  # each value once
            chosen = vals if sample is None else rng.sample(vals, min(sample, len(vals)))
            base = cmd.alone.get(option, cmd.base)
            for lab, value in chosen:
                args = {
                    **base,
                    option: [*base.get(option, []), value] if option in cmd.extend else value,
                }
                cases.append(_case(cmd, option, lab, value, args, True))
                if sample is None and lab in NO_MAX_MEMORY and cmd.options[option] is V.INT:
                    cases.append(_case(cmd, option, lab, value, args, False))
    return cases


def max_memory_cases() -> list[Case]:
    """--max-memory and HEADCOUNT_MAX_MEMORY themselves (on a fast command)."""
    argv = ("induction", "solve", "--input", "0 1 0 1", "--json")
    cases = [
        Case("global", "--max-memory", "--max-memory", lab, (*argv, "--max-memory", v))
        for lab, v in V.SIZES
    ]
    cases += [
        Case(
            "global",
            "--max-memory",
            "HEADCOUNT_MAX_MEMORY",
            lab,
            argv,
            env=(("HEADCOUNT_MAX_MEMORY", v),),
        )
        for lab, v in V.SIZES
    ]
    cases.append(
        Case("global", "--max-memory", "--max-memory", "missing value", (*argv, "--max-memory"))
    )
    cases.append(Case("global", "--max-memory", "--max-memory=", "''", (*argv, "--max-memory=")))
    return cases
