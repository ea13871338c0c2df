"""Certificates for induction-heads models: which inputs, the plan that checks a request once, and
the typed result the CLI prints.

Inputs: all of Σ^n when S^n ≤ EXHAUSTIVE_LIMIT (streamed in lexicographic chunks); otherwise
`samples` seeded random sequences (half uniform, half no-adjacent-repeats) plus every adversarial
family of headcount.induction.task (each max(2, samples // 8) sequences; the INDEX family where S ≥
3 and n ≥ 3).

Layouts (headcount.induction.layouts): the inputs above are the characters; with layout "hop-prefix"
every input gets the hop token of k = `hops` first and position 0 is not scored
(core.certify.certify's IGNORE). The model is bound to the task's tokens first
(core.model.vocab.bind_task), so imported models (decoder "vocab") certify in their own vocabulary.

Plan (plan_certify): the request (sizes, samples, seed, hop, layout) and, where the model's shape is
known before it is built (a construction: induction/source.py's ModelSource.check), the resource
bounds are checked once, before anything is built or read; the bounds that need the model itself
(its context, its vocabulary, its work per input) are checked when it is bound (CertifyPlan.bind).
certify_induction runs the plan on a model or on a ModelSource.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from headcount.common.errors import InputError, param
from headcount.common.progress import Progress
from headcount.common.resources import check_memory, check_work
from headcount.common.validate import check_int, check_number
from headcount.core.attention import current_algorithm
from headcount.core.certify import (
    Certificate,
    Checkpoint,
    InputStream,
    Model,
    certify_model,
    certify_spread,
    check_spread,
    make_executor,
)
from headcount.core.model import model_digest
from headcount.induction import task
from headcount.induction.construction import (
    ModelShape,
    check_sizes,
    evaluation_bytes,
    evaluation_work,
)
from headcount.induction.layouts import (
    bind_layout,
    check_hops,
    check_layout,
    evaluation_memory,
    layout_reference,
    layout_stream,
    model_work,
    prefix_length,
)
from headcount.induction.multihop.families import KHOP_FAMILIES
from headcount.induction.source import ModelSource

EXHAUSTIVE_LIMIT = 2_000_000
EXHAUSTIVE_CHUNK = 1 << 15
SAMPLE_CHUNK = 256  # sampled inputs are generated and checked this many at a time
# induction certify: at most this many score entries per pass over its inputs (evaluation_work:
# inputs × (heads · n² + a fixed cost per input)), by default: about an hour of the blocked passes
# on 2 cores (a certificate evaluates its inputs about three times); the largest the report asks
# for by default is 1.5·10¹¹ (n = 65536, S = 256, 12 inputs). max_work (plan_certify) raises it.
CERTIFY_MAX_WORK = 2**38
WORK = "a number of score entries"
LOWER_OR_RAISE = f"{param('samples')} or {param('n')}, or raise {param('max_work')}"
# ... and at most this many multiply-adds per pass (inputs × layouts.model_work): what bounds wide
# models, whose weights and readout (an imported model's vocabulary) cost more per position than
# their scores. The passes run 10⁹–10¹⁰ multiply-adds a second here, a pass in minutes at the limit.
CERTIFY_MAX_MULTIPLY_ADDS = 2.0**41
# Bytes per input row while sampled inputs are generated (int64 rows, random floats, argsort keys):
# per position and per alphabet token.
INPUT_BYTES_PER_POSITION, INPUT_BYTES_PER_TOKEN = 48, 24


def exhaustive_cases(limit: int = EXHAUSTIVE_LIMIT) -> list[tuple[int, int]]:
    """Every (S, n) with 2 ≤ S ≤ n and S^n ≤ limit, smallest first: the sizes certified on all of
    Σ^n."""
    cases = []
    S = 2
    while S**S <= limit:
        n = S
        while S**n <= limit:
            cases.append((S, n))
            n += 1
        S += 1
    return cases


def default_samples(n: int) -> int:
    """Random sequences checked when not exhaustive: many for short inputs, fewer for long ones."""
    return max(8, min(512, (1 << 17) // max(n, 1)))


def exhaustive_size(n: int, alphabet: int) -> bool:
    """Whether certify checks all of Σ^n: S^n ≤ EXHAUSTIVE_LIMIT (S^n never computed for a large n:
    with S ≥ 2 it exceeds the limit once n > 21)."""
    return n <= 21 and task.count_sequences(n, alphabet) <= EXHAUSTIVE_LIMIT


def family_sizes(
    n: int, alphabet: int, samples: int | None, hops: int = 1
) -> list[tuple[str, int]]:
    """The sampled input set: (family, count) — uniform and no-adjacent-repeats share `samples`
    (default default_samples(n)), each adversarial family gets max(2, samples // 8) (INDEX only when
    S ≥ 3, n ≥ 3; with hops ≥ 2 also the k-hop families of induction/multihop/families.py)."""
    samples = default_samples(n) if samples is None else samples
    per_family = max(2, samples // 8)
    families: list[tuple[str, int]] = [
        ("uniform", samples - samples // 2),
        ("no_adjacent_repeats", samples // 2),
    ]
    for name in task.ADVERSARIAL_FAMILIES:
        if name == "index" and (alphabet < 3 or n < 3):
            continue
        families.append((name, per_family))
    if hops >= 2:
        families += [(name, per_family) for name in KHOP_FAMILIES]
    return families


def induction_inputs(
    n: int,
    alphabet: int,
    samples: int | None = None,
    seed: int = 0,
    exhaustive: bool | None = None,
    hops: int = 1,
):
    """(stream, exhaustive): a re-playable stream of (family, tokens) chunks for certify_model."""
    if exhaustive is None:
        exhaustive = exhaustive_size(n, alphabet)
    if exhaustive:
        return task.AllSequences(n, alphabet, EXHAUSTIVE_CHUNK), True

    families = family_sizes(n, alphabet, samples, hops)
    chunk = SAMPLE_CHUNK

    def stream() -> Iterator[tuple[str, np.ndarray]]:
        rng = np.random.default_rng(seed)  # same seed, same inputs, every replay
        for name, count in families:
            for start in range(0, count, chunk):
                rows = min(chunk, count - start)
                if name in KHOP_FAMILIES:
                    yield name, KHOP_FAMILIES[name](rng, rows, n, alphabet, hops)
                else:
                    yield name, task.GENERATORS[name](rng, rows, n, alphabet)

    return stream, False


@dataclass(frozen=True)
class InductionCertificate:
    """certify_model's Certificate of a model on induction heads, with what was certified: the hop,
    the model's shape (heads per layer, residual width), the task size, and the input set
    (exhaustive or sampled with `seed`). `size` = Σ heads·d_model·precision_bits (None without a
    precision). `construction` names the construction of a model built in-process; a model read from
    a file (`from_file`) reports what its own info says as `file_label` instead: a label, never a
    fact. `layout` is in the JSON only when it is not "plain" (so plain certificates read as they
    always did)."""

    hops: int
    layers: int
    heads_per_layer: tuple[int, ...]
    d_model: int
    n: int
    alphabet: int
    construction: str | None
    exhaustive: bool
    seed: int | None
    certificate: Certificate
    size: int | None
    file_label: str | None = None
    from_file: bool = False
    layout: str = "plain"

    @property
    def scope(self) -> str:
        """What "checked" covers: "exhaustive" (all of Σ^n) or "sampled" (only the inputs
        checked)."""
        return "exhaustive" if self.exhaustive else "sampled"

    def shortfalls(self, need_exhaustive: bool = False) -> list[str]:
        """Why this certificate does not show that the model answers every input checked right,
        proven at precision_bits (with need_exhaustive: every input of Σ^n), one line each; empty
        when it does."""
        c, case, total = self.certificate, f"n={self.n} S={self.alphabet}", self.alphabet**self.n
        out = []
        if c.errors:
            first = c.first_counterexample and c.first_counterexample.to_json()
            out.append(f"{case}: {c.errors} float64 errors (first: {first})")
        if c.precision_bits is None:
            out.append(f"{case}: no precision ≤ 60 bits is error-free")
        elif not c.proven_at_precision_bits:
            out.append(
                f"{case}: not certified at p={c.precision_bits} "
                f"({c.uncertified_positions} positions not proven by the interval bounds)"
            )
        if need_exhaustive and (not self.exhaustive or c.inputs_checked != total):
            out.append(
                f"{case}: not checked on all of Σ^n (scope {self.scope}, {c.inputs_checked} "
                "inputs, "
                f"S^n = {total})"
            )
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "task": "induction",
            "hops": self.hops,
            **({"layout": self.layout} if self.layout != "plain" else {}),
            "layers": self.layers,
            "heads": list(self.heads_per_layer),
            "dim": self.d_model,
            "n": self.n,
            "alphabet": self.alphabet,
            **(
                {"file_label": self.file_label}
                if self.from_file
                else {"construction": self.construction}
            ),
            "exhaustive": self.exhaustive,
            "scope": self.scope,
            "seed": self.seed,
            **self.certificate.to_json(),
            "size": self.size,
        }


def check_request(
    n: int, alphabet: int, samples: int | None, seed: int = 0, hops: int = 1, layout: str = "plain"
) -> None:
    """certify's request on its own: task sizes, samples ≥ 1, seed ≥ 0, the hop and the layout."""
    check_sizes(n, alphabet)
    if samples is not None and samples < 1:
        raise InputError(f"{param('samples')} {samples} must be ≥ 1")
    check_int("seed", seed, 0)
    check_hops(hops)
    check_layout(layout)


def certify_inputs(
    n: int, alphabet: int, samples: int | None, exhaustive: bool | None = None, hops: int = 1
) -> tuple[int, int]:
    """(inputs per pass, rows of the largest chunk) of certify's input set."""
    exhaustive = exhaustive_size(n, alphabet) if exhaustive is None else exhaustive
    if exhaustive:
        return task.count_sequences(n, alphabet), EXHAUSTIVE_CHUNK
    inputs = sum(count for _, count in family_sizes(n, alphabet, samples, hops))
    return inputs, min(SAMPLE_CHUNK, max(2, default_samples(n) if samples is None else samples))


def _what(n: int, alphabet: int) -> str:
    return f"induction certify at {param('n')} {n} {param('alphabet')} {alphabet}"


def check_certify_resources(
    n: int,
    alphabet: int,
    samples: int | None,
    heads: int,
    d_model: int,
    exhaustive: bool | None = None,
    prefix: int = 0,
    hops: int = 1,
    max_work: float = CERTIFY_MAX_WORK,
) -> None:
    """certify's bounds, from the sizes alone: `max_work` score entries per pass, and the memory
    of evaluating the model (construction.evaluation_bytes) plus one chunk of inputs within the
    guard's limit (`prefix`: tokens before the n characters, the hop token of the hop-prefix
    layout)."""
    inputs, rows = certify_inputs(n, alphabet, samples, exhaustive, hops)
    length = n + prefix
    what = _what(n, alphabet)
    chunk = float(rows) * (
        INPUT_BYTES_PER_POSITION * float(length) + INPUT_BYTES_PER_TOKEN * float(alphabet)
    )
    check_memory(evaluation_bytes(length, d_model) + chunk, what)
    check_work(
        evaluation_work(inputs, heads, length),
        max_work,
        f"{what} on {inputs} inputs ({heads} heads)",
        "score entries per pass (inputs × heads × n²)",
        LOWER_OR_RAISE,
    )


def check_model_resources(
    model: Model,
    n: int,
    alphabet: int,
    samples: int | None,
    exhaustive: bool | None = None,
    prefix: int = 0,
    hops: int = 1,
    max_work: float = CERTIFY_MAX_WORK,
) -> None:
    """The bounds that depend on the (bound) model beyond its heads and width:
    CERTIFY_MAX_MULTIPLY_ADDS per pass (scaled as `max_work` scales CERTIFY_MAX_WORK), and the
    memory of the pass with its output logits (an imported model's whole vocabulary)."""
    inputs, rows = certify_inputs(n, alphabet, samples, exhaustive, hops)
    length = n + prefix
    what = _what(n, alphabet)
    check_memory(evaluation_memory(model, length, rows), what)
    check_work(
        float(inputs) * model_work(model, length),
        CERTIFY_MAX_MULTIPLY_ADDS * (max_work / CERTIFY_MAX_WORK),
        f"{what} on {inputs} inputs",
        "multiply-adds per pass (inputs × the model's work per input)",
        LOWER_OR_RAISE,
    )


@dataclass(frozen=True)
class CertifyPlan:
    """What certify runs, once its request is checked (plan_certify): the task (n, alphabet, hops,
    layout), the input set (exhaustive, or `samples` seeded inputs plus the adversarial families)
    and `shape`, the model's shape already checked against the resource bounds (None until a model
    is bound)."""

    n: int
    alphabet: int
    samples: int | None
    seed: int
    hops: int
    layout: str
    exhaustive: bool
    shape: ModelShape | None = None
    max_work: float = CERTIFY_MAX_WORK  # score entries per pass the request may take

    @property
    def prefix(self) -> int:
        """Tokens before the characters: the hop token of the hop-prefix layout."""
        return prefix_length(self.layout)

    def check_shape(self, shape: ModelShape) -> None:
        """check_certify_resources for a model of this shape."""
        check_certify_resources(
            self.n,
            self.alphabet,
            self.samples,
            shape.heads,
            shape.d_model,
            self.exhaustive,
            self.prefix,
            self.hops,
            self.max_work,
        )

    def bind(self, model: Model) -> Model:
        """`model` bound to the task's tokens in the plan's layout (layouts.bind_layout), after
        checking that it handles the sizes; then the bounds of the bound model (the shape's, unless
        the plan checked that shape already, and check_model_resources)."""
        n, alphabet = self.n, self.alphabet
        if not self.prefix and (n > model.n_ctx or alphabet > model.alphabet):
            raise InputError(
                f"the model handles n ≤ {model.n_ctx} and alphabet ≤ {model.alphabet}; "
                f"got {param('n')} {n} {param('alphabet')} {alphabet}"
            )
        bound = bind_layout(model, self.layout, n, alphabet, self.hops)
        if ModelShape.of(bound) != self.shape:
            self.check_shape(ModelShape.of(bound))
        args = (self.samples, self.exhaustive, self.prefix, self.hops, self.max_work)
        check_model_resources(bound, n, alphabet, *args)
        return bound

    def inputs(self) -> InputStream:
        """The re-playable stream of (family, input) chunks, laid out (module docstring)."""
        stream, _ = induction_inputs(
            self.n, self.alphabet, self.samples, self.seed, self.exhaustive, self.hops
        )
        return (
            layout_stream(stream, self.layout, self.alphabet, self.hops) if self.prefix else stream
        )


def plan_certify(
    n: int,
    alphabet: int,
    samples: int | None = None,
    seed: int = 0,
    hops: int = 1,
    layout: str = "plain",
    exhaustive: bool | None = None,
    source: ModelSource | None = None,
    max_work: float | None = None,
) -> CertifyPlan:
    """certify's plan: the request checked (check_request), the input set chosen (exhaustive when
    exhaustive_size, unless `exhaustive` says), and, for a `source` whose shape is known before it
    is built (a construction: ModelSource.check, which also checks that it exists at these sizes),
    the resource bounds of that shape — all before anything is built or read. `max_work`: the
    score entries per pass allowed (default CERTIFY_MAX_WORK; the multiply-adds limit scales with
    it): the dense count, which the pruned passes of the constructions stay far below."""
    check_request(n, alphabet, samples, seed, hops, layout)
    limit = CERTIFY_MAX_WORK if max_work is None else check_number("max_work", max_work, 1, WORK)
    shape = None if source is None else source.check(n, alphabet, hops, layout)
    chosen = exhaustive_size(n, alphabet) if exhaustive is None else bool(exhaustive)
    plan = CertifyPlan(n, alphabet, samples, seed, hops, layout, chosen, shape, limit)
    if shape is not None:
        plan.check_shape(shape)
    return plan


def _identity(model: Model, plan: CertifyPlan, dtypes: bool) -> dict[str, Any]:
    """What a checkpoint file is written for (the executor is not in it: the same certificate)."""
    fields = ("n", "alphabet", "samples", "seed", "hops", "layout", "exhaustive")
    return {
        "task": "induction", "model": model_digest(model),
        **{name: getattr(plan, name) for name in fields},
        "dtypes": dtypes, "algorithm": current_algorithm(),
        "chunks": [EXHAUSTIVE_CHUNK, SAMPLE_CHUNK],
    }  # fmt: skip


def certify_induction(
    model: Model | ModelSource,
    n: int,
    alphabet: int,
    samples: int | None = None,
    seed: int = 0,
    hops: int = 1,
    exhaustive: bool | None = None,
    dtypes: bool = True,
    from_file: bool = False,
    layout: str = "plain",
    progress: Progress = False,
    checkpoint: str | os.PathLike | None = None,
    executor: str = "local",
    workers: int | None = None,
    address: str | None = None,
    max_work: float | None = None,
) -> InductionCertificate:
    """Certificate of `model` on induction heads (hop `hops`, 1..layouts.MAX_HOPS) at length n over
    `alphabet` tokens, in `layout` (module docstring; the model is bound to the task's tokens
    first). `model` may be where it comes from (ModelSource: a model file, or a construction —
    `layers` 1 or 2, or "auto" / the k-hop depth for `hops` — at (n, alphabet)), read or built after
    plan_certify's checks. dtypes=False skips the IEEE-dtype passes (dtypes_exact is then empty);
    from_file: the model was read from a file (always so for a ModelSource's model file), so its
    info's "construction" is reported as `file_label`, a label, not a construction. progress
    (common.progress): the inputs checked. checkpoint: an SQLite file the run stores its state in
    after every chunk and resumes from (core.certify.checkpoint); it is refused when written for
    another model or other arguments. executor: "local" (this process) or "ray": the chunks spread
    over a Ray cluster — a local one of `workers` CPUs, or the one at `address` — with the same
    certificate (core.certify.distributed). max_work: the score entries per pass the request may
    take (plan_certify; default CERTIFY_MAX_WORK)."""
    spread = make_executor(executor, workers, address)
    if spread is not None:
        check_spread(current_algorithm())
    source = model if isinstance(model, ModelSource) else None
    plan = plan_certify(n, alphabet, samples, seed, hops, layout, exhaustive, source, max_work)
    if source is not None:
        model, from_file = source.load(n, alphabet, hops, layout), from_file or source.from_file
    bound = plan.bind(model)
    total, _ = certify_inputs(n, alphabet, samples, plan.exhaustive, hops)
    reference = layout_reference(layout, hops)
    saved = None
    if checkpoint is not None:
        saved = Checkpoint(checkpoint, _identity(model, plan, dtypes))
    try:
        if spread is None:
            cert = certify_model(
                bound, plan.inputs(), reference, dtypes=dtypes, progress=progress, total=total,
                checkpoint=saved,
            )  # fmt: skip
        else:
            cert, _ = certify_spread(
                bound, plan.inputs(), reference, spread, dtypes=dtypes, progress=progress,
                total=total, checkpoint=saved,
            )  # fmt: skip
    finally:
        if saved is not None:
            saved.close()
    p = cert.precision_bits
    label = model.info.get("construction")
    label = label[:200] if isinstance(label, str) else None
    return InductionCertificate(
        hops=hops,
        layers=len(model.layers),
        heads_per_layer=tuple(model.heads_per_layer),
        d_model=model.d_model,
        n=n,
        alphabet=alphabet,
        construction=None if from_file else label,
        exhaustive=plan.exhaustive,
        seed=None if plan.exhaustive else seed,
        certificate=cert,
        size=None if p is None else model.size(p),
        file_label=label if from_file else None,
        from_file=from_file,
        layout=layout,
    )
