"""k-hop claims and figures (Sanford, Hsu & Telgarsky 2024): what depth trained models need as the
hop count grows — attention-only models, GPT-2-style models (pre-LayerNorm, GELU MLP) as the paper
trained, and the block families studied today (Llama, GPT-NeoX) at the same width — and the
precision each trained model needs at each hop count.

Measure: the experiments "khop", "khop-gpt2", "khop-llama" and "khop-neox" (learn/experiments.py:
one model per depth L trained on hop counts 1..K, the hop count as the first token; each run's
exported model certified at every k on sampled inputs of its training distribution), read back from
Context.results_db. Check: the depth–hop trade-off (_khop_problems), the same three statements for
every model family. Precision
is reported, never asserted: a certificate needs the model right on every sample, and the rigorous
bounds decide how small a p they can prove. Describe: one line.

The drawings are registered here as report figures and in KHOP_DRAW, which report/learning/claims.py
merges into the drawings `headcount experiment NAME` uses.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import matplotlib.pyplot as plt
import numpy as np

from headcount.learn.certified_runs import KHOP_CERTIFY_SAMPLES
from headcount.learn.experiments import experiment_spec
from headcount.learn.summaries import KhopSummary
from headcount.report.claims import KHOP_PAPER, ClaimResult, Context, claim, status
from headcount.report.experiments import experiment_summary
from headcount.report.figures import cell_text, figure

KHOP_SOLVED = 0.05  # a depth "solves" hop count k when its error at k is at most this


# ------------------------------------------------------------------------------------------------
# Check


def khop_min_depths(layers: list[int], err: list[list[float]]) -> list[float]:
    """For each hop count (column of err), the smallest depth whose error there is ≤ KHOP_SOLVED
    (inf: none)."""
    return [
        min((L for L, row in zip(layers, err) if row[j] <= KHOP_SOLVED), default=math.inf)
        for j in range(len(err[0]))
    ]


def _khop_shape_problem(layers: list[int], hops: list[int], err: list[list[float]]) -> str | None:
    """Why the error table cannot be checked (fewer than 2 depths or hop counts, a missing or NaN
    error)."""
    shape_ok = (
        len(layers) >= 2
        and len(hops) >= 2
        and len(err) == len(layers)
        and all(len(r) == len(hops) for r in err)
    )
    if not shape_ok or any(
        not 0 <= e <= 1 for row in err for e in row
    ):  # NaN fails the range test too
        return (
            f"need ≥ 2 depths and ≥ 2 hop counts with an error each, got layers {layers}, hops "
            f"{hops}"
        )
    return None


def _khop_problems(layers: list[int], hops: list[int], err: list[list[float]]) -> list[str]:
    """Where the k-hop error table contradicts the claim's three statements (empty: it agrees)."""
    shape = _khop_shape_problem(layers, hops, err)
    if shape is not None:
        return [shape]
    out = [
        f"L={L}: error at k={hops[-1]} ({row[-1]:.4f}) is not above error at k={hops[0]} "
        f"({row[0]:.4f})"
        for L, row in zip(layers, err)
        if max(row) > KHOP_SOLVED and not row[-1] > row[0]
    ]
    need = khop_min_depths(layers, err)
    if any(a > b for a, b in zip(need, need[1:])) or not need[-1] > need[0]:
        out.append(
            f"smallest depth with error ≤ {100 * KHOP_SOLVED:g}% by k = {need}: not growing with k"
        )
    if not err[-1][-1] < err[0][-1]:
        out.append(
            f"at k={hops[-1]} the deepest model (L={layers[-1]}, {err[-1][-1]:.4f}) is not better "
            "than the "
            f"shallowest (L={layers[0]}, {err[0][-1]:.4f})"
        )
    return out


THREE_STATEMENTS = (
    f"at every depth whose error exceeds {100 * KHOP_SOLVED:g}% at some k, the error at the "
    "largest k is "
    f"strictly above the error at k = 1; the smallest depth with error ≤ {100 * KHOP_SOLVED:g}% "
    "at k never "
    "decreases as k grows and is strictly larger at the largest k than at k = 1; and at the "
    "largest k the "
    "deepest model's error is strictly below the shallowest's"
)


# ------------------------------------------------------------------------------------------------
# Describe


def _table(s: KhopSummary) -> str:
    return f"error (%) by L × k={s.hops}: " + "; ".join(
        f"L={L}: " + " ".join(f"{100 * e:.1f}" for e in row) for L, row in zip(s.layers, s.error)
    )


def _min_depths(s: KhopSummary) -> str:
    need = khop_min_depths(s.layers, s.error)
    return f"smallest depth with error ≤ {100 * KHOP_SOLVED:g}% by k: " + ", ".join(
        f"k={k}: {'none' if L == math.inf else L}" for k, L in zip(s.hops, need)
    )


def _describe_khop(s: KhopSummary, problems: list[str]) -> str:
    table = _table(s)
    if not problems:
        table += "; " + _min_depths(s)
    return "; ".join(problems + [table])


def _precision_text(s: KhopSummary) -> str:
    """The certified precision per cell (— where none), or why there is none."""
    if s.precision_bits is None:
        return "precision not measured (runs without certificates)"
    cells = "; ".join(
        f"L={L}: " + " ".join("—" if p is None else str(p) for p in row)
        for L, row in zip(s.layers, s.precision_bits)
    )
    return (
        f"certified fixed:p by L × k={s.hops} ({KHOP_CERTIFY_SAMPLES} sampled inputs each, — : not "
        f"certified): {cells} ({s.certified_cells} of {len(s.layers) * len(s.hops)} cells)"
    )


def _log_bound(s: KhopSummary) -> str:
    """The smallest trained depth reaching ≤ KHOP_SOLVED next to the construction's ⌈log₂ k⌉ + 2
    (k ≤ 2^(L−2) by design; induction/multihop/construction.py)."""
    need = khop_min_depths(s.layers, s.error)
    return "smallest depth vs the construction's ⌈log₂ k⌉+2 (reported, not asserted): " + ", ".join(
        f"k={k}: {'none' if L == math.inf else L} vs {(k - 1).bit_length() + 2}"
        for k, L in zip(s.hops, need)
    )


# ------------------------------------------------------------------------------------------------
# Claims


@claim(
    "learning.khop.depth",
    paper=KHOP_PAPER,
    source="k-hop induction heads, depth vs k",
    statement="k-hop induction heads needs depth growing with k. Measured on one model per depth "
    "L trained "
    f"on k = 1..K: {THREE_STATEMENTS}.",
    check=f"PASS only if the three statements hold on the measured error table: "
    f"{THREE_STATEMENTS}.",
)
def khop_depth(ctx: Context) -> ClaimResult:
    s = experiment_summary(ctx, "khop")
    problems = _khop_problems(s.layers, s.hops, s.error)
    return ClaimResult(s.to_json(), status(not problems), _describe_khop(s, problems), s)


@dataclass(frozen=True)
class KhopComparison:
    """The series of learning.khop.gpt2: both families' summaries (attention_only None: not
    measured) and their experiments' training steps (None: the trainer's default)."""

    gpt2: KhopSummary
    attention_only: KhopSummary | None
    gpt2_steps: int | None = None
    attention_only_steps: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "gpt2": self.gpt2.to_json(),
            "attention_only": None
            if self.attention_only is None
            else self.attention_only.to_json(),
            "gpt2_steps": self.gpt2_steps,
            "attention_only_steps": self.attention_only_steps,
        }

    def steps_text(self) -> str:
        gpt2, attention = ("the trainer's default" if s is None else str(s) for s in self.steps)
        return f"training steps: GPT-2-style {gpt2}, attention-only {attention}"

    @property
    def steps(self) -> tuple[int | None, int | None]:
        return self.gpt2_steps, self.attention_only_steps


def _steps(name: str, scale: str) -> int | None:
    """The training steps experiment `name` sets at `scale` (None: the trainer's default)."""
    return experiment_spec(name, scale)["fixed"].get("steps")


def _comparison(s: KhopComparison) -> str:
    """Error at the largest k of each depth both families trained (reported, not asserted)."""
    if s.attention_only is None or s.attention_only.hops != s.gpt2.hops:
        return "attention-only models not comparable (other hop counts)"
    other = dict(zip(s.attention_only.layers, s.attention_only.error))
    pairs = [
        (L, row[-1], other[L][-1]) for L, row in zip(s.gpt2.layers, s.gpt2.error) if L in other
    ]
    return (
        f"error (%) at k={s.gpt2.hops[-1]}, GPT-2-style vs attention-only: "
        + ", ".join(f"L={L}: {100 * g:.1f} vs {100 * a:.1f}" for L, g, a in pairs)
        + f" ({s.steps_text()})"
    )


@claim(
    "learning.khop.gpt2",
    paper=KHOP_PAPER,
    source="k-hop induction heads, depth vs k, with the GPT-2 blocks (Radford et al. 2019) the "
    "paper trained",
    statement="GPT-2-style models (pre-LayerNorm, GELU MLP) trained on k-hop show the same "
    "depth–hop "
    "trade-off as attention-only ones. Measured on one model per depth L = 2..5 trained on k = "
    "1..K: "
    f"{THREE_STATEMENTS}. Reported beside it: the attention-only models' errors, and each model's "
    f"certified precision at each k (the smallest fixed:p proven right on {KHOP_CERTIFY_SAMPLES} "
    "sampled "
    "inputs of its training distribution; none where it errs on one or the proof is incomplete).",
    check=f"PASS only if the three statements hold on the GPT-2 models' error table: "
    f"{THREE_STATEMENTS}.",
)
def khop_gpt2(ctx: Context) -> ClaimResult:
    gpt2 = experiment_summary(ctx, "khop-gpt2")
    steps = _steps("khop-gpt2", ctx.scale), _steps("khop", ctx.scale)
    series = KhopComparison(gpt2, experiment_summary(ctx, "khop"), *steps)
    problems = _khop_problems(gpt2.layers, gpt2.hops, gpt2.error)
    detail = _describe_khop(gpt2, problems)
    if not problems:
        detail += f"; {_log_bound(gpt2)}; {_comparison(series)}"
    detail += f"; {_precision_text(gpt2)}"
    return ClaimResult(series.to_json(), status(not problems), detail, series)


# the block families of learning.khop.families: experiment, name in the report, its block
FAMILIES = (
    ("khop-gpt2", "GPT-2", "pre-LayerNorm, GELU MLP"),
    ("khop-llama", "Llama", "RMSNorm, rotary positions, SwiGLU MLP"),
    ("khop-neox", "GPT-NeoX", "parallel attention and MLP, rotary positions, LayerNorm, GELU MLP"),
)
FAMILY_BLOCKS = "; ".join(f"{name}: {block}" for _, name, block in FAMILIES)


@dataclass(frozen=True)
class KhopFamilies:
    """The series of learning.khop.families: each block family's summary and its experiment's
    training steps (None: the trainer's default), in FAMILIES order."""

    families: tuple[str, ...]  # the report's names (GPT-2, Llama, GPT-NeoX)
    summaries: tuple[KhopSummary, ...]
    steps: tuple[int | None, ...]

    def min_depths(self) -> list[list[float]]:
        """Per family, the smallest depth with error ≤ KHOP_SOLVED at each hop count (inf: none)."""
        return [khop_min_depths(s.layers, s.error) if not s.empty else [] for s in self.summaries]

    def to_json(self) -> dict[str, Any]:
        return {
            name: {
                "summary": s.to_json(),
                "steps": steps,
                "min_depth": [None if L == math.inf else L for L in need],
            }
            for name, s, steps, need in zip(
                self.families, self.summaries, self.steps, self.min_depths()
            )
        }


def _families_depths(s: KhopFamilies) -> str:
    """The smallest depth per k side by side, one column per family (reported, not asserted)."""
    if len({tuple(f.hops) for f in s.summaries}) != 1:
        return "families not comparable (other hop counts)"
    need = s.min_depths()
    cells = ", ".join(
        f"k={k}: " + "/".join("none" if d[j] == math.inf else str(d[j]) for d in need)
        for j, k in enumerate(s.summaries[0].hops)
    )
    return (
        f"smallest depth with error ≤ {100 * KHOP_SOLVED:g}% by k ({'/'.join(s.families)}): {cells}"
    )


@claim(
    "learning.khop.families",
    paper=KHOP_PAPER,
    source="k-hop induction heads, depth vs k, by block family: the GPT-2 blocks the paper "
    "trained, Llama (Touvron et al. 2023) and GPT-NeoX (Black et al. 2022) blocks",
    statement="The depth–hop trade-off holds for every block family at equal width (the same "
    f"heads, d_model, data and steps; {FAMILY_BLOCKS}). Measured on one model per family and "
    f"depth L = 2..5 trained on k = 1..K, for each family: {THREE_STATEMENTS}. Reported beside "
    "it: the smallest depth with error ≤ 5% at each k, family by family, and each model's "
    "certified precision at each k.",
    check=f"PASS only if, for each of GPT-2, Llama and GPT-NeoX, the three statements hold on its "
    f"models' error table: {THREE_STATEMENTS}.",
)
def khop_families(ctx: Context) -> ClaimResult:
    names, summaries = [], []
    for experiment, name, _ in FAMILIES:
        names.append(name)
        summaries.append(experiment_summary(ctx, experiment))
    steps = tuple(_steps(experiment, ctx.scale) for experiment, _, _ in FAMILIES)
    series = KhopFamilies(tuple(names), tuple(summaries), steps)
    problems = {
        name: _khop_problems(s.layers, s.hops, s.error) for name, s in zip(names, summaries)
    }
    parts = [f"{name}: {_describe_khop(s, problems[name])}" for name, s in zip(names, summaries)]
    if not any(problems.values()):
        parts.append(_families_depths(series))
    parts += [f"{name}: {_precision_text(s)}" for name, s in zip(names, summaries)]
    parts.append(
        "training steps: "
        + ", ".join(f"{name} {'default' if n is None else n}" for name, n in zip(names, steps))
    )
    passed = not any(problems.values())
    return ClaimResult(series.to_json(), status(passed), "; ".join(parts), series)


# ------------------------------------------------------------------------------------------------
# Figures: heat maps of the error by (L, k), each cell with its certified precision


KHOP_DRAW: dict[str, Callable[[plt.Figure, Any], str]] = {}  # experiment → its drawing of a summary


def _label(error: float, precision: int | None, measured: bool) -> str:
    """A cell's text: the error in %, and under it p = the certified precision (— : none), when
    measured."""
    if not measured:
        return f"{100 * error:.1f}"
    return f"{100 * error:.1f}\n{'—' if precision is None else f'p={precision}'}"


def _heatmap(ax: plt.Axes, s: KhopSummary, title: str) -> Any:
    """The error table of `s` as a heat map on ax (each cell labelled by _label); returns the
    image."""
    err = 100 * np.array(s.error, dtype=float)
    # shades of the trained colour (every cell is a trained model), darker = more errors
    im = ax.imshow(err, origin="lower", aspect="auto", cmap="Reds", vmin=0, vmax=100)
    measured = s.precision_bits is not None
    for (i, j), e in np.ndenumerate(err):
        p = s.precision_bits[i][j] if measured else None
        cell_text(ax, j, i, _label(e / 100, p, measured), e > 50)
    ax.set_xticks(range(len(s.hops)), [str(k) for k in s.hops])
    ax.set_yticks(range(len(s.layers)), [str(L) for L in s.layers])
    ax.set_xlabel("hops k")
    ax.set_ylabel("layers L of the model")
    ax.set_title(title)
    return im


PAPER = (
    f"Paper ({KHOP_PAPER.cite}): k-hop induction heads is solvable with about log₂ k + 2 layers "
    "and needs depth growing with log k."
)
PRECISION_NOTE = (
    "Under each error: p = the smallest fixed:p at which the model is certified right on "
    f"{KHOP_CERTIFY_SAMPLES} sampled inputs at that k (—: not certified — it errs on one, or the "
    "bounds "
    "leave a position open)."
)


def _draw(fig: plt.Figure, s: KhopSummary, title: str, models: str) -> str:
    ax = fig.add_subplot(1, 1, 1)
    im = _heatmap(ax, s, title)
    fig.colorbar(im, ax=ax, label="error on positions with an answer (%)")
    return (
        f"{PAPER} Measured: {models} per depth L, trained on hop counts 1..K given as the first "
        "token ('no "
        "adjacent repeats', alphabet 4), error at each k on held-out positions with an answer."
        + (f" {PRECISION_NOTE}" if s.precision_bits is not None else "")
    )


def draw_khop(fig: plt.Figure, s: KhopSummary) -> str:
    title = "k-hop induction heads: error of trained L-layer models"
    return _draw(fig, s, title, "one trained attention-only model")


def draw_khop_gpt2(fig: plt.Figure, s: KhopSummary) -> str:
    title = "k-hop, trained L-layer GPT-2-style models: error"
    return _draw(fig, s, title, "one trained GPT-2-style model (pre-LayerNorm, GELU MLP)")


def _panels(fig: plt.Figure, panels: list[tuple[str, KhopSummary | None]], title: str) -> bool:
    """One heat map per measured summary, side by side on one colour scale (False: none
    measured)."""
    measured = [(name, s) for name, s in panels if s is not None and not s.empty]
    if not measured:
        fig.text(0.5, 0.5, "no k-hop runs in the results database", ha="center", va="center")
        return False
    axes = fig.subplots(1, len(measured), squeeze=False)[0]
    images = [_heatmap(ax, summary, name) for ax, (name, summary) in zip(axes, measured)]
    fig.colorbar(images[-1], ax=axes[-1], label="error (%)")
    fig.suptitle(title)
    return True


def draw_comparison(fig: plt.Figure, s: KhopComparison) -> str:
    """Attention-only (left, when measured) and GPT-2-style (right) heat maps, one colour scale."""
    panels = [("attention-only layers", s.attention_only), ("GPT-2 blocks", s.gpt2)]
    title = "k-hop induction heads, trained L-layer models: error by depth and hop count"
    if not _panels(fig, panels, title):
        return "No k-hop runs were measured."
    return (
        f"{PAPER} Measured: one trained model per depth L per family (attention-only layers; "
        "GPT-2 blocks: pre-LayerNorm attention and GELU MLP), trained on hop counts 1..K given "
        "as the first "
        f"token ('no adjacent repeats', alphabet 4; {s.steps_text()}); error at each k on "
        "held-out positions "
        f"with an answer. {PRECISION_NOTE}"
    )


def draw_families(fig: plt.Figure, s: KhopFamilies) -> str:
    """One heat map per block family (GPT-2, Llama, GPT-NeoX), one colour scale."""
    panels = [(f"{name} blocks", summary) for name, summary in zip(s.families, s.summaries)]
    title = "k-hop induction heads by block family at equal width: error by depth and hop count"
    if not _panels(fig, list(panels), title):
        return "No k-hop runs were measured."
    steps = ", ".join(
        f"{name} {'default' if n is None else n}" for name, n in zip(s.families, s.steps)
    )
    return (
        f"{PAPER} Measured: one trained model per depth L per block family ({FAMILY_BLOCKS}) at "
        "the same heads and width, trained on hop counts 1..K given as the first token ('no "
        f"adjacent repeats', alphabet 4; training steps: {steps}); error at each k on held-out "
        f"positions with an answer. {PRECISION_NOTE}"
    )


def _draw_family(name: str, block: str) -> Callable[[plt.Figure, KhopSummary], str]:
    """The `headcount experiment` drawing of one block family's k-hop experiment."""

    def draw(fig: plt.Figure, s: KhopSummary) -> str:
        title = f"k-hop, trained L-layer {name}-style models: error"
        return _draw(fig, s, title, f"one trained {name}-style model ({block})")

    return draw


KHOP_DRAW["khop"] = draw_khop
KHOP_DRAW["khop-gpt2"] = draw_khop_gpt2
KHOP_DRAW.update({f"khop-floor-w{w}": draw_khop for w in (28, 64)})  # the heat map, one width
KHOP_DRAW.update({e: _draw_family(name, block) for e, name, block in FAMILIES[1:]})
figure("learning_khop_heatmap", claim="learning.khop.depth")(
    lambda fig, result: draw_khop(fig, result.series)
)
figure("learning_khop_gpt2", claim="learning.khop.gpt2")(
    lambda fig, result: draw_comparison(fig, result.series)
)
figure("learning_khop_families", claim="learning.khop.families")(
    lambda fig, result: draw_families(fig, result.series)
)
