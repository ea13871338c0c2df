"""The claim registry: one small function per paper claim, each computing its own evidence.

A claim module (e.g. :mod:`headcount.report.induction.constructions`) defines functions decorated
with :func:`claim`. The decorator records the claim's id, paper, source (theorem or section) and
statement, plus the per-scale parameters the function is called with::

    @claim("induction.two_layer.constant_dim", paper=INDUCTION_PAPER, source="§1",
           statement="...", check="...",
           quick={"lengths": [8, 64]}, full={"lengths": [8, 64, 4096]})
    def constant_dim(ctx, lengths):
        ...
        return ClaimResult(measured={...}, status=passes(...), detail="...")

No claim hard-codes its result: it builds models, runs certificates and compares what it measured
with what the paper says, returning FAIL when the two disagree. Expensive sub-results (certificates)
go through :meth:`Context.cached`, so two claims that need the same certificate compute it once per
run.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

PASS, FAIL = "PASS", "FAIL"


@dataclass(frozen=True)
class Paper:
    """A paper the claims come from, as the report's references list cites it."""

    key: str  # the anchor of its entry in the report's references (#ref-KEY)
    cite: str  # how a claim names it: authors (year)
    authors: str
    title: str
    venue: str  # where it appeared, with its arXiv identifier
    url: str


# The papers, one object each, so every claim, figure and report section names a paper the same way.
# The two 2024 papers of the same authors are told apart as 2024a (February) and 2024b (August).
KHOP_PAPER = Paper(
    "sanford2024a",
    "Sanford, Hsu & Telgarsky (2024a)",
    "Clayton Sanford, Daniel Hsu and Matus Telgarsky",
    "Transformers, parallel computation, and logarithmic depth",
    "Proceedings of the 41st International Conference on Machine Learning (ICML 2024); "
    "arXiv:2402.09268",
    "https://arxiv.org/abs/2402.09268",
)
INDUCTION_PAPER = Paper(
    "sanford2024b",
    "Sanford, Hsu & Telgarsky (2024b)",
    "Clayton Sanford, Daniel Hsu and Matus Telgarsky",
    "One-layer transformers fail to solve the induction heads task",
    "arXiv:2408.14332, 2024",
    "https://arxiv.org/abs/2408.14332",
)
MULTITASK_PAPER = Paper(
    "hsu2026",
    "Hsu & Xu (2026)",
    "Daniel Hsu and Mingyue Xu",
    "Attention-based representations for multi-task computation",
    "arXiv:2608.04243, 2026",
    "https://arxiv.org/abs/2608.04243",
)
PAPERS = (INDUCTION_PAPER, KHOP_PAPER, MULTITASK_PAPER)  # the report's sections, in this order
# cited by the claims' sources and statements, not re-derived
CITED = (
    Paper(
        "bietti2023",
        "Bietti et al. (2023)",
        "Alberto Bietti, Vivien Cabannes, Diane Bouchacourt, Hervé Jégou and Léon Bottou",
        "Birth of a transformer: a memory viewpoint",
        "Advances in Neural Information Processing Systems 36 (NeurIPS 2023); arXiv:2306.00802",
        "https://arxiv.org/abs/2306.00802",
    ),
    Paper(
        "radford2019",
        "Radford et al. (2019)",
        "Alec Radford, Jeffrey Wu, Rewon Child, David Luan, Dario Amodei and Ilya Sutskever",
        "Language models are unsupervised multitask learners (GPT-2)",
        "OpenAI technical report, 2019",
        "https://openai.com/research/better-language-models",
    ),
)


@dataclass(frozen=True)
class Claim:
    id: str
    paper: str  # the paper's citation (Paper.cite)
    source: str  # theorem / section of the paper
    statement: str  # what the paper says, in words
    function: Callable[..., ClaimResult]
    params: dict[str, dict[str, Any]] = field(
        default_factory=dict, compare=False
    )  # scale -> kwargs
    module: str = ""  # the module that registered it (claims are grouped by module)
    check: str = ""  # the exact test the measurement had to pass (what could have failed)
    reference: str = ""  # Paper.key of its paper

    def params_for(self, scale: str) -> dict[str, Any]:
        return dict(self.params.get(scale, {}))


@dataclass
class ClaimResult:
    """What a claim measured. `series` holds data for figures (not written to summary.json)."""

    measured: dict[str, Any]
    status: str  # PASS or FAIL
    detail: str = ""
    series: Any = None  # what figures draw: a dict of lists, or a typed summary

    def __post_init__(self) -> None:
        if self.status not in (PASS, FAIL):
            raise ValueError(f"status must be {PASS!r} or {FAIL!r}, got {self.status!r}")


REGISTRY: dict[str, Claim] = {}


def claim(
    id: str,
    *,
    paper: Paper,
    source: str,
    statement: str,
    check: str = "",
    quick: dict[str, Any] | None = None,
    full: dict[str, Any] | None = None,
) -> Callable[[Callable[..., ClaimResult]], Callable[..., ClaimResult]]:
    """Register the decorated function as claim `id`; it is called as fn(ctx, **params[scale]).
    `check` says in one sentence what the measurement had to satisfy for PASS."""

    def register(fn: Callable[..., ClaimResult]) -> Callable[..., ClaimResult]:
        if id in REGISTRY:
            raise ValueError(f"claim {id!r} is registered twice")
        REGISTRY[id] = Claim(
            id,
            paper.cite,
            source,
            statement,
            fn,
            {"quick": dict(quick or {}), "full": dict(full or {})},
            fn.__module__,
            check,
            paper.key,
        )
        return fn

    return register


def unregister(id: str) -> None:
    REGISTRY.pop(id, None)


def status(ok: bool) -> str:
    return PASS if ok else FAIL


@dataclass
class Context:
    """Shared state of one reproduce run: the scale, progress sinks and a cache of sub-results.

    `progress` gets a claim's stage lines (cached's "    label ..."); `step` gets the counted
    progress of the work in hand ("run 3/12", "input 5000/20000"): a claim passes it as a library
    function's `progress` argument (common.progress.Progress), which sends it throttled texts."""

    scale: str = "quick"
    progress: Callable[[str], None] = lambda line: None
    step: Callable[[str], None] = lambda text: None
    results_db: str | None = (
        None  # the report's results database (learning claims write their runs there)
    )
    cache: dict[Hashable, Any] = field(default_factory=dict)
    hits: int = 0
    misses: int = 0

    def cached(self, key: Hashable, compute: Callable[[], Any], label: str | None = None) -> Any:
        """compute() once per key per run; later calls return the stored value."""
        if key in self.cache:
            self.hits += 1
            return self.cache[key]
        self.misses += 1
        clock = time.perf_counter()
        if label:
            self.progress(f"    {label} ...")
        value = compute()
        if label:
            self.progress(f"    {label}: {time.perf_counter() - clock:.1f} s")
        self.cache[key] = value
        return value

    def cached_values(self, kind: str) -> list[Any]:
        """Every cached value whose key is a tuple starting with `kind`."""
        return [v for k, v in self.cache.items() if isinstance(k, tuple) and k and k[0] == kind]


def fit_line(x: Iterable[float], y: Iterable[float]) -> tuple[float, float]:
    """Least-squares (slope, intercept) of y = slope·x + intercept; needs two distinct x."""
    x, y = np.asarray(list(x), dtype=float), np.asarray(list(y), dtype=float)
    if x.shape != y.shape or x.size < 2 or np.ptp(x) == 0:
        raise ValueError(f"a line fit needs ≥ 2 points with distinct x, got x={x.tolist()}")
    A = np.stack([x, np.ones_like(x)], axis=1)
    (slope, intercept), *_ = np.linalg.lstsq(A, y, rcond=None)
    return float(slope), float(intercept)


def fit_log2(n: Iterable[float], y: Iterable[float]) -> tuple[float, float]:
    """Least-squares (c, c′) of y = c·log₂ n + c′."""
    return fit_line([math.log2(v) for v in n], y)
