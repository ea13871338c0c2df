"""The learning experiments of spec/learning.md (and issue 32's block families): each one sweep, its
table, and a summary read back from the database.

    run_experiment("xor-phase", scale="quick", db=DEFAULT_DB) -> ExperimentResult

| experiment      | sweep (quick scale; `full` grows it)                        | compared with  |
|-----------------|-------------------------------------------------------------|----------------|
| induction-depth | layers {1, 2} × n {16, 32}, 1 head, dim 32, alphabet 4       | the INDEX bound|
| khop            | layers {2, 3, 4}, trained on 1..4 hops (no adjacent repeats) | depth ≈ log₂ k |
| khop-gpt2       | the same, GPT-2 blocks (LayerNorm, GELU MLP), layers {2..5}  | depth ≈ log₂ k |
| khop-llama      | the same, Llama blocks (RMSNorm, rotary, SwiGLU), {2..5}     | depth ≈ log₂ k |
| khop-neox       | the same, GPT-NeoX blocks (parallel, rotary), {2..5}         | depth ≈ log₂ k |
| khop-floor-w28  | layers {3, 4} at d_model 28, trained on 1..7 hops (+ MLP)    | ⌊log₂ k⌋ + 2   |
| khop-floor-w64  | the same at d_model 64                                       | ⌊log₂ k⌋ + 2   |
| minmax-heads    | heads {1, 2} × dim {1, 2, 3, 4, 6}, M = 8, n = 4, 2 seeds    | exact verifier |
| xor-phase       | D, H ∈ {1, 2, 4, 8}, n = 8, 2 seeds                          | D·H = n (Thm 2)|

Each experiment is a sweep spec (`experiment_spec`) run by `headcount.learn.sweep.run_sweep` —
resumable, parallel, one row per run in the results database — then its summarizer (summaries.py:
summarize_induction_depth, summarize_khop, summarize_minmax_heads, summarize_xor_phase) reads *only
the database* (the rows of this spec's run ids) and returns its typed summary, the series its claim
and figure use. What the theory's constructions achieve on the same cells (their certificates) is
not a summary's business: report/learning/claims.py adds it, draws the figure and checks the claims,
so learn/ never imports report/. k-hop: one model per depth L is trained on hop counts drawn from
1..K (the hop count is the first token) and evaluated at every k ≤ K (`accuracy_by_hop`); the heat
map shows the error by (L, k).

induction-depth and khop keep their trained models (`keeps_models`): each run's exported model is
written beside the database, as models/<run id>.safetensors (`model_folder`, `kept_model`), so the
report can load the best two-layer model and the deepest k-hop model and read their heads
(report/induction/mechanism.py, report/induction/khop_mechanism.py); the run ids, and so the rows,
are unchanged (a kept run's `model_path` names its file).

The k-hop experiments run with the built-in runner KHOP_RUNNER (learn/certified_runs.py:
run_khop_certified): the training run, then its exported model certified at every hop count
(`khop_certificates`: sampled inputs in the training layout, the smallest fixed:p with a proof, the
IEEE dtypes that stay exact), stored with the run's metrics as `certificates_by_hop`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from headcount.common.errors import InputError
from headcount.common.jsonable import jsonable
from headcount.common.progress import Progress
from headcount.common.validate import check_choice
from headcount.core.model import load_model
from headcount.learn.constants import DEFAULT_DB, SCALES
from headcount.learn.store import ResultsStore
from headcount.learn.summaries import (
    Rows,
    Summary,
    summarize_induction_depth,
    summarize_khop,
    summarize_minmax_heads,
    summarize_xor_phase,
)
from headcount.learn.sweep import (
    DEFAULT_RUNNER,
    KHOP_RUNNER,
    SweepCounts,
    kept_model_path,
    load_spec,
    run_sweep,
    sweep_table,
)

GPT2_BLOCK = {
    "mlp": True,
    "layernorm": True,
    "activation": "gelu",
}  # the k-hop paper's blocks (GPT2Model)
# learn/models/blocks.py's families, each with its own norm, MLP and positions (train_induction)
LLAMA_BLOCK = {"arch": "llama"}
NEOX_BLOCK = {"arch": "neox"}
KHOP_QUICK = {"n": 16, "alphabet": 4, "heads": 2, "dim": 32, "hops": 4}  # khop's quick width
# the k-hop experiments' full scale; lr 1e-3: at 3e-3 the attention-only L = 4, 5 models diverged (L
# = 5: 65 % error at k = 1)
KHOP_FULL = {"n": 32, "alphabet": 4, "heads": 2, "dim": 64, "hops": 8, "steps": 4000, "lr": 1e-3}
MODEL_FOLDER = (
    "models"  # beside the results database: the kept models of experiments with keeps_models
)


@dataclass(frozen=True)
class Experiment:
    name: str
    task: str
    description: str
    scales: dict[str, dict[str, Any]]  # scale -> {"fixed": …, "grid": …, "seeds": …}
    summarize: Callable[
        [Rows], Summary
    ]  # database rows -> the summary (series of claim and figure)
    table_metrics: tuple[
        str, ...
    ]  # the metrics `headcount experiment` tabulates (sweep_table names)
    runner: str = DEFAULT_RUNNER  # the sweep runner's registry name
    keeps_models: bool = (
        False  # each run's exported model is kept beside the database (module docstring)
    )


@dataclass(frozen=True)
class ExperimentResult:
    """One run_experiment call: the sweep's counts, the summary read from the database, the Markdown
    table."""

    experiment: str
    scale: str
    db: str
    sweep: SweepCounts
    summary: Summary
    table: str

    def to_json(self) -> dict[str, Any]:
        """The fields in order; NaN in the summary kept as NaN (a mean over no values), as printed
        before."""
        return {
            "experiment": self.experiment,
            "scale": self.scale,
            "db": self.db,
            "sweep": self.sweep.to_json(),
            "summary": jsonable(self.summary.to_json(), nonfinite="keep"),
            "table": self.table,
        }


def _khop_blocks(name: str, block: dict[str, Any], blocks: str) -> Experiment:
    """A k-hop experiment with one block family at khop's width (heads, dim) and depths 2..5: the
    learning lab's comparison of families (learning.khop.gpt2, learning.khop.families)."""
    return Experiment(
        name,
        "khop",
        f"k-hop induction, {blocks}: error by depth L and hop count k",
        {
            # khop's settings with the family's block; 1000 steps keep the quick report's budget
            # (four models, ~65 s of one core in all for GPT-2; Llama and NeoX about as much)
            "quick": {
                "fixed": {**KHOP_QUICK, "steps": 1000, **block},
                "grid": {"layers": [2, 3, 4, 5]},
                "seeds": [0],
            },
            "full": {"fixed": KHOP_FULL | block, "grid": {"layers": [2, 3, 4, 5]}, "seeds": [0, 1]},
        },
        summarize_khop,
        ("accuracy_by_hop", "accuracy_bottom", "train_seconds"),
        KHOP_RUNNER,
    )


def _khop_floor(width: int) -> Experiment:
    """The depth question of the floor construction on trained models: layers 3 and 4 (the
    ⌊log₂ k⌋ + 2 depths of k = 3 and k = 4..7) at one width, trained on k = 1..7 with an MLP per
    block; d_model 28 is the pointer-doubling construction's constant width, 64 a wide model. The
    report reads their layer 0 (induction.khop.floor: a strictly-earlier pointer or not)."""
    fixed = {"n": 16, "alphabet": 4, "heads": 2, "dim": width, "hops": 7, "mlp": True}
    return Experiment(
        f"khop-floor-w{width}",
        "khop",
        f"k-hop induction at the floor depths, d_model {width}: error by depth L and hop count k",
        {
            # quick: a smoke-size run (the report uses these at the full scale only)
            "quick": {"fixed": fixed | {"steps": 1500}, "grid": {"layers": [3, 4]}, "seeds": [0]},
            # lr 1e-3 as KHOP_FULL: at the trainer's default the d_model 64 models did not learn
            # k = 1 (88 % accuracy after 10,000 steps)
            "full": {
                "fixed": fixed | {"steps": 10000, "lr": 1e-3},
                "grid": {"layers": [3, 4]},
                "seeds": [0],
            },
        },
        summarize_khop,
        ("accuracy_by_hop", "accuracy_bottom", "train_seconds"),
        KHOP_RUNNER,
        keeps_models=True,
    )


EXPERIMENTS: dict[str, Experiment] = {
    e.name: e
    for e in (
        Experiment(
            "induction-depth",
            "induction",
            "induction heads: one layer vs two layers (accuracy vs n)",
            {
                "quick": {
                    "fixed": {"heads": 1, "dim": 32, "alphabet": 4},
                    "grid": {"n": [16, 32], "layers": [1, 2]},
                    "seeds": [0],
                },
                "full": {
                    "fixed": {"dim": 32},
                    "grid": {
                        "n": [16, 32, 64, 128],
                        "alphabet": [4, 16],
                        "heads": [1, 2],
                        "layers": [1, 2],
                    },
                    "seeds": [0, 1],
                },
            },
            summarize_induction_depth,
            ("accuracy", "accuracy_bottom", "accuracy_index", "train_seconds"),
            keeps_models=True,
        ),
        Experiment(
            "khop",
            "khop",
            "k-hop induction: error by depth L and hop count k",
            {
                "quick": {
                    "fixed": KHOP_QUICK,
                    "grid": {"layers": [2, 3, 4]},
                    "seeds": [0],
                },
                "full": {"fixed": KHOP_FULL, "grid": {"layers": [2, 3, 4, 5]}, "seeds": [0, 1]},
            },
            summarize_khop,
            ("accuracy_by_hop", "accuracy_bottom", "train_seconds"),
            KHOP_RUNNER,
            keeps_models=True,
        ),
        _khop_blocks("khop-gpt2", GPT2_BLOCK, "GPT-2 blocks (pre-LayerNorm, GELU MLP)"),
        _khop_blocks("khop-llama", LLAMA_BLOCK, "Llama blocks (RMSNorm, rotary, SwiGLU MLP)"),
        _khop_blocks(
            "khop-neox", NEOX_BLOCK, "GPT-NeoX blocks (parallel attention and MLP, rotary)"
        ),
        _khop_floor(28),
        _khop_floor(64),
        Experiment(
            "minmax-heads",
            "minmax",
            "min and max: one head vs two heads, by value dimension",
            {
                "quick": {
                    "fixed": {"M": 8, "n": 4},
                    "grid": {"heads": [1, 2], "dim": [1, 2, 3, 4, 6]},
                    "seeds": [0, 1],
                },
                "full": {
                    "fixed": {},
                    "grid": {"M": [8, 16], "n": [4, 8], "heads": [1, 2], "dim": [1, 2, 3, 4, 6, 8]},
                    "seeds": [0, 1, 2],
                },
            },
            summarize_minmax_heads,
            (
                "accuracy_min",
                "accuracy_max",
                "accuracy_both",
                "verifier_min.counterexample_exists",
                "verifier_max.counterexample_exists",
                "train_seconds",
            ),
        ),
        Experiment(
            "xor-phase",
            "boolean",
            "n-bit XOR: which (D, H) training solves, against D·H = n",
            {
                "quick": {
                    "fixed": {"function": "xor", "n": 8},
                    "grid": {"degree": [1, 2, 4, 8], "heads": [1, 2, 4, 8]},
                    "seeds": [0, 1],
                },
                "full": {
                    "fixed": {"function": "xor", "n": 12},
                    "grid": {"degree": [1, 2, 3, 4, 6], "heads": [1, 2, 3, 4, 6, 12]},
                    "seeds": [0, 1, 2],
                },
            },
            summarize_xor_phase,
            ("accuracy_all_inputs", "solved", "solved_exact", "train_seconds"),
        ),
    )
}


def _experiment(name: str) -> Experiment:
    if name not in EXPERIMENTS:
        raise InputError(f"unknown experiment {name!r}: use one of {', '.join(EXPERIMENTS)}")
    return EXPERIMENTS[name]


def experiment_spec(name: str, scale: str = "quick") -> dict[str, Any]:
    """The sweep spec (the dict form of a sweep TOML file) of experiment `name` at `scale`."""
    exp = _experiment(name)
    s = exp.scales[check_choice("scale", scale, SCALES)]
    runner = {} if exp.runner == DEFAULT_RUNNER else {"runner": exp.runner}
    return {
        "sweep": {
            "name": f"{name}-{scale}",
            "experiment": name,
            "task": exp.task,
            "seeds": list(s["seeds"]),
            "description": exp.description,
            **runner,
        },
        "fixed": dict(s["fixed"]),
        "grid": {k: list(v) for k, v in s["grid"].items()},
    }


def experiment_rows(name: str, scale: str, db: str | Path) -> Rows:
    """The done rows of this experiment's spec at `scale`, read from the database."""
    ids = {run.run_id for run in load_spec(experiment_spec(name, scale)).runs()}
    with ResultsStore(db) as store:
        return [r for r in store.rows(experiment=name, status="done") if r["run_id"] in ids]


def summarize_experiment(name: str, scale: str, db: str | Path) -> Summary:
    """The experiment's summary, from the database only."""
    return _experiment(name).summarize(experiment_rows(name, scale, db))


def model_folder(db: str | Path) -> Path:
    """The folder of the models an experiment keeps (keeps_models): MODEL_FOLDER beside the
    database."""
    return Path(db).parent / MODEL_FOLDER


def kept_model(db: str | Path, run_id: str) -> Path:
    """Where run `run_id` of an experiment that keeps its models has its model (the file may be
    missing: a database written before the experiment kept them, or a folder moved without it)."""
    return kept_model_path(model_folder(db), run_id)


def kept_or_retrained(db: str | Path, row: dict[str, Any]) -> tuple[Any, dict[str, Any] | None]:
    """(model, retrained): run `row`'s kept model (kept_model) and None; or, when the file is
    missing, the model trained again from the row's config (deterministic per seed on CPU) and kept
    there, with the new run's JSON — so a caller can say whether the stored and the new metrics
    agree."""
    path = kept_model(db, row["run_id"])
    if not path.is_file():
        from headcount.learn.train import run_config  # torch: only when a model must be trained

        path.parent.mkdir(parents=True, exist_ok=True)
        retrained = run_config({**row["config"], "out": str(path)}).to_json()
        return load_model(path), retrained
    return load_model(path), None


def _models(name: str, db: str | Path) -> Path | None:
    """The model folder of experiment `name` (None: it keeps no models)."""
    return model_folder(db) if _experiment(name).keeps_models else None


def ensure_experiment(
    name: str, scale: str, db: str | Path, workers: int | None = None, progress: Progress = False
) -> Summary:
    """Run whatever of the experiment's sweep is not yet in `db`, then its summary from the
    database."""
    spec = experiment_spec(name, scale)
    run_sweep(spec, db, workers=workers, progress=progress, model_dir=_models(name, db))
    return summarize_experiment(name, scale, db)


def run_experiment(
    name: str,
    scale: str = "quick",
    db: str | Path = DEFAULT_DB,
    workers: int | None = None,
    backend: str = "local",
    address: str | None = None,
    progress: Progress = False,
) -> ExperimentResult:
    """Run (or resume) the experiment's sweep into `db` (keeping its models beside it, if it keeps
    them), then its summary and table from the database. InputError for an unknown experiment, scale
    or backend, or a bad worker count, before anything runs."""
    counts = run_sweep(
        experiment_spec(name, scale),
        db,
        workers=workers,
        backend=backend,
        address=address,
        progress=progress,
        model_dir=_models(name, db),
    )
    return ExperimentResult(
        experiment=name,
        scale=scale,
        db=str(Path(db).resolve()),
        sweep=counts,
        summary=summarize_experiment(name, scale, db),
        table=sweep_table(db, name, format="md", metrics=list(_experiment(name).table_metrics)),
    )
