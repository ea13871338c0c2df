"""The fast paths against their references, on hostile families built for each shortcut
(fast_paths.py; issue 27): every speed-up must be as sound as what it replaces.

For a family of kind "exact" (tie-settling, score-tame, sparse-far, prefix-sharing, torch-backend,
exact-logit-ties), each model is checked twice:

1. proof: every position the blocked algorithm's bounds prove at fixed:p (certified_predict, on the
   family's backend) carries the exact fixed:p model's answer (core.passes.exact_fixed) — a proven
   wrong answer is a false certificate — and every final residual box (the row pass, and the prefix
   pass where it runs) contains the exact fixed:p residual, whether or not a decoder reads that
   coordinate;
2. certificate: certify_model on the family's inputs, with the exact fixed:p outputs as the target,
   gives the same certificate under the blocked algorithm (and the family's backend; torch-backend
   also on NumPy's) as under the reference algorithm — every field but `seconds` and
   `exact_positions` (which counts the positions the exact evaluator settled: a shortcut that proves
   more leaves it fewer). One exception, counted apart: the IEEE-pass fields (FLOAT_FIELDS: float64
   is "checked", not proven) may differ where every position whose float outputs differ is one where
   the rigorous bounds in mode exact prove nothing under either algorithm — float64 sits within its
   own rounding of a decision there, and the order of its sums decides (_float64_ill_conditioned); a
   float output that differs where the exact model's answer is proven is a real difference. And
   `rejected` may show another counterexample for the same p where each shown is one the exact
   evaluator confirms (_same_rejections): the search for one follows the float emulation, which the
   prefix pass and the row pass round differently at a tie.

For the family of kind "float" (negligible-cut), the blocked float64 pass (its backend) is checked
against the reference's dense pass: each head output within the error bound of a float64 evaluation
(2γ_{n+2}·Σ_j α_j|v_jc|, both sides within γ of the exact sum), and every float64 output equal —
except at positions where the dense logits' margin is itself within that bound of a tie (float64's
answer depends on the order of its sums there: counted as `ambiguous`, never as agreement).

Each family's counts are printed (`-s` shows them), with how often its shortcut ran
(core.attention.counters, core.passes.prefix): a family that never reaches its shortcut checks
nothing, and fails. Default run: FAST_MODELS models per family. The slow set (`-m slow`):
HEADCOUNT_FAST_PATH_MODELS (default 10,000) per family, on two worker processes.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import pytest

from headcount.core.attention import (
    ATTENTION,
    FLOAT,
    TIES,
    attend,
    dense_attend,
    use_algorithm,
    use_backend,
)
from headcount.core.certify.certify import certify_model
from headcount.core.certify.evaluate import certified_predict, emulate, prefix_parts
from headcount.core.model.symbols import token_text
from headcount.core.numbers.interval import gamma
from headcount.core.numbers.precision import EXACT, FLOAT64, IEEE_DTYPES, Precision, fixed
from headcount.core.passes.bounds import residual_bounds
from headcount.core.passes.exact_fixed import exact_fixed_predict, exact_fixed_residual
from headcount.core.passes.forward import residual_stream
from headcount.core.passes.prefix import prefix_residual_bounds, prefix_worthwhile
from tests.soundness.fast_paths import FAMILIES, Case
from tests.soundness.palettes import describe

FAST_MODELS = 30
SLOW_MODELS = int(os.environ.get("HEADCOUNT_FAST_PATH_MODELS", "10000"))
SLOW_WORKERS = 2
# which counter shows that a family reached its shortcut (core.attention.counters names, or
# "prefix_passes")
SHORTCUT = {
    "tie-settling": "rows_settled",
    "negligible-cut": "rows_redone",
    "score-tame": "tame_heads",
    "sparse-far": "far_keys",
    "prefix-sharing": "prefix_passes",
    "torch-backend": "torch_blocks",
    "exact-logit-ties": "exact_ties",
}
IGNORED_FIELDS = ("seconds", "exact_positions")


@dataclass
class Counts:
    models: int = 0
    positions: int = 0
    proven: int = 0
    proven_wrong: int = 0
    boxes: int = 0
    boxes_missing_exact: int = 0
    certificates: int = 0
    certificates_differ: int = 0
    float64_ill_conditioned: int = 0
    witnesses_differ: int = 0
    float_positions: int = 0
    float_differ: int = 0
    ambiguous: int = 0
    exact_evaluator_errors: int = 0
    shortcut: Counter = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)

    def note(self, text: str) -> None:
        if len(self.examples) < 5:
            self.examples.append(text)

    def merge(self, other: Counts) -> None:
        for name in (
            "models positions proven proven_wrong boxes boxes_missing_exact certificates "
            "certificates_differ "
            "float64_ill_conditioned witnesses_differ float_positions "
            "float_differ ambiguous exact_evaluator_errors"
        ).split():
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.shortcut.update(other.shortcut)
        for text in other.examples:
            self.note(text)

    @property
    def failures(self) -> int:
        return (
            self.proven_wrong
            + self.boxes_missing_exact
            + self.certificates_differ
            + self.float_differ
        )

    def line(self, family: str, seconds: float) -> str:
        hits = ", ".join(f"{k} {v}" for k, v in sorted(self.shortcut.items()))
        return (
            f"fast path {family}: models {self.models}, positions {self.positions}, proven "
            f"{self.proven}, "
            f"proven-but-wrong {self.proven_wrong}, boxes {self.boxes} (missing the exact value "
            f"{self.boxes_missing_exact}), certificates {self.certificates} (differ "
            f"{self.certificates_differ}, float64 fields only where float64 cannot decide "
            f"{self.float64_ill_conditioned}, another proven witness of the same rejection "
            f"{self.witnesses_differ}), float64 positions {self.float_positions} "
            f"(differ {self.float_differ}, "
            f"ambiguous {self.ambiguous}), exact-evaluator errors {self.exact_evaluator_errors}; "
            f"shortcut: {hits}; {seconds:.0f} s"
        )


def _counters() -> dict[str, int]:
    return ATTENTION.snapshot() | FLOAT.snapshot() | TIES.snapshot()


def _shortcut_hits(before: dict[str, int], after: dict[str, int]) -> Counter:
    delta = Counter({k: after[k] - before[k] for k in after})
    delta["far_keys"] = delta["computed"] - delta["exponentiated"]  # keys bounded as a far group
    return +delta  # positive counts only


def _certificate(case: Case, algorithm: str, backend: str, target: np.ndarray) -> dict:
    def inputs():
        yield "family", case.tokens

    def reference(tokens: np.ndarray) -> np.ndarray:
        return (
            target if tokens is case.tokens else exact_fixed_predict(case.model, tokens, case.bits)
        )

    with use_algorithm(algorithm), use_backend(backend), np.errstate(all="ignore"):
        cert = certify_model(case.model, inputs, reference).to_json()
    return {k: v for k, v in cert.items() if k not in IGNORED_FIELDS}


def check_exact(case: Case, counts: Counts, family: str) -> None:
    """The proof and the certificate (module docstring) of one model."""
    model, bits, tokens = case.model, case.bits, case.tokens
    try:
        target = exact_fixed_predict(model, tokens, bits)
    except (
        ArithmeticError
    ) as error:  # an exact evaluator that cannot settle a tie: reported, not agreement
        counts.exact_evaluator_errors += 1
        counts.note(f"{family}: exact evaluator raised {error!r}:\n  {describe(model, bits)}")
        return
    before = _counters()
    with use_backend(case.backend), np.errstate(all="ignore"):
        out, proven = certified_predict(model, tokens, fixed(bits))
    counts.shortcut.update(_shortcut_hits(before, _counters()))
    if case.backend == "torch":
        counts.shortcut["torch_blocks"] += 1
    if prefix_parts(model, tokens) is not None:
        counts.shortcut["prefix_passes"] += 1
    counts.shortcut["exact_ties"] += _exact_ties(case)
    check_boxes(case, counts, family)
    counts.positions += proven.size
    counts.proven += int(proven.sum())
    wrong = proven & (out != target)
    if wrong.any():
        counts.proven_wrong += int(wrong.sum())
        row, pos = map(int, np.argwhere(wrong)[0])
        counts.note(
            f"{family}: input {tokens[row].tolist()} position {pos + 1} proven "
            f"{int(out[row, pos])}, exact "
            f"{int(target[row, pos])}:\n  {describe(model, bits)}"
        )
    sides = [("blocked", case.backend), ("reference", "numpy")] + [("blocked", "numpy")] * (
        case.backend != "numpy"
    )
    certs = [_certificate(case, algorithm, backend, target) for algorithm, backend in sides]
    counts.certificates += 1
    keys = sorted(k for k in certs[0] if any(c[k] != certs[0][k] for c in certs[1:]))
    floats = set(keys) & FLOAT_FIELDS
    witnesses = "rejected" in keys and _same_rejections(case, certs)
    if keys and set(keys) <= FLOAT_FIELDS | ({"rejected"} if witnesses else set()):
        if not floats or _float64_ill_conditioned(case, sides):
            counts.float64_ill_conditioned += bool(
                floats
            )  # float64 fields differ only where it cannot decide
            counts.witnesses_differ += (
                witnesses  # the same p rejected, each by a proven counterexample
            )
            keys = []
    if keys:
        counts.certificates_differ += 1
        counts.note(f"{family}: certificates differ in {keys}: {certs}:\n  {describe(model, bits)}")


# the fields a certificate takes from its IEEE passes (float64: "checked"), and `certified`, which
# needs one
FLOAT_FIELDS = {
    "errors",
    "errors_bottom",
    "errors_token",
    "accuracy",
    "accuracy_bottom",
    "first_counterexample",
    "dtypes_exact",
    "float32_exact",
    "bfloat16_exact",
    "certified",
}


def _same_rejections(case: Case, certs: list[dict]) -> bool:
    """Whether the certificates reject the same precisions, each by an input the exact fixed:p model
    gets wrong at the position given (checked here by the exact evaluator), so that they differ only
    in which counterexample they show: the search for one follows the float emulation of fixed:p,
    and the prefix pass and the row pass may round an emulated value onto either side of a tie (the
    proof itself is exact)."""
    if len({tuple(r["p"] for r in c["rejected"]) for c in certs}) != 1:
        return False
    for c in certs:
        for r in c["rejected"]:
            tokens = np.array([r["input"]])
            got = exact_fixed_predict(case.model, tokens, r["p"], positions=[r["position"] - 1])
            if token_text(got[0, r["position"] - 1]) != r["got"] or r["got"] == r["expected"]:
                return False
    return True


def _float64_ill_conditioned(case: Case, sides: list[tuple[str, str]]) -> bool:
    """Whether the IEEE passes of the certificates' sides disagree only at positions where the real
    model's answer is not proven by the rigorous bounds in mode exact (no rounding points) under
    either algorithm: there a float64 evaluation sits within its own rounding error of a decision
    boundary, and which side it lands on depends on the order of its sums (the prefix pass adds a
    query's i + 1 keys, the row pass n with exact zeros; on a model with weights of 1e300 that last
    bit is amplified without limit). Where the exact model's answer is proven and a float pass still
    disagrees, the float pass is wrong: a real difference."""
    model, tokens = case.model, case.tokens
    outputs, proofs = [], []
    for algorithm, backend in sides:
        with use_algorithm(algorithm), use_backend(backend), np.errstate(all="ignore"):
            outputs.append([emulate(model, tokens, Precision(name)) for name in IEEE_DTYPES])
            proofs.append(certified_predict(model, tokens, EXACT)[1])
    differ = np.zeros(tokens.shape, bool)
    for other in outputs[1:]:
        for a, b in zip(outputs[0], other):
            differ |= a != b
    return bool(differ.any()) and not (differ & np.logical_or.reduce(proofs)).any()


BOX_ROWS = 4  # inputs per model whose residual boxes are checked against the exact residual


def check_boxes(case: Case, counts: Counts, family: str) -> None:
    """Every coordinate of the final residual box of the bounds (row pass, and the prefix pass where
    it runs) contains the exact fixed:p residual (core.passes.exact_fixed), on the first BOX_ROWS
    inputs: a box that misses it is a proof of something false, whether or not a decoder happens to
    read it."""
    model, bits = case.model, case.bits
    tokens = case.tokens[:BOX_ROWS]
    passes = {"rows": lambda: residual_bounds(model, tokens, fixed(bits))}
    if prefix_worthwhile(model, tokens) is not None:
        passes["prefixes"] = lambda: prefix_residual_bounds(model, tokens, fixed(bits))
    exact = [exact_fixed_residual(model, row, bits) for row in tokens]
    for name, run in passes.items():
        with use_backend(case.backend), np.errstate(all="ignore"):
            mid, rad = run()
        for r, x in enumerate(exact):
            for index in np.ndindex(x.shape):
                m, w = float(mid[(r, *index)]), float(rad[(r, *index)])
                counts.boxes += 1
                if not np.isfinite(m) or not np.isfinite(w):
                    continue  # unbounded: proves nothing
                value = Fraction(int(x[index].p), int(x[index].q))
                if not Fraction(m) - Fraction(w) <= value <= Fraction(m) + Fraction(w):
                    counts.boxes_missing_exact += 1
                    counts.note(
                        f"{family} ({name} pass): input {tokens[r].tolist()} position "
                        f"{index[0] + 1} "
                        f"coordinate {index[1]}: box {m!r} ± {w!r} misses the exact {value}:\n  "
                        + describe(model, bits)
                    )


def _exact_ties(case: Case) -> int:
    """Inputs × positions whose float64 logits tie exactly between the best class and another (where
    the lowest-class rule decides): a count of how often exact-logit-ties reaches its shortcut."""
    if not isinstance(getattr(case.model.decoder, "W_U", None), np.ndarray):
        return 0
    with np.errstate(all="ignore"):
        logits = residual_stream(case.model, case.tokens, fixed(case.bits)) @ case.model.decoder.W_U
        logits = logits + case.model.decoder.b_U
    top = np.sort(logits, axis=-1)
    return int((top[..., -1] == top[..., -2]).sum())


def _one_layer_qkv(case: Case) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """(q, k, v, W_O) of every head of a one-layer plain model on the case's inputs, in float64."""
    model = case.model
    x = model.W_E[case.tokens] + model.W_pos[None, : case.tokens.shape[1]]
    return [(x @ h.W_Q, x @ h.W_K, x @ h.W_V, h.W_O) for h in model.layers[0].heads]


def check_float(case: Case, counts: Counts, family: str) -> None:
    """The float64 pass (module docstring) of one one-layer model."""
    model, tokens, n = case.model, case.tokens, case.tokens.shape[1]
    before = _counters()
    with use_backend(case.backend), np.errstate(all="ignore"):
        blocked = emulate(model, tokens, FLOAT64)
        heads = [
            (attend(q, k, v, "causal", FLOAT64), q, k, v, W_O)
            for q, k, v, W_O in _one_layer_qkv(case)
        ]
    counts.shortcut.update(_shortcut_hits(before, _counters()))
    with use_algorithm("reference"), np.errstate(all="ignore"):
        dense = emulate(model, tokens, FLOAT64)
        logit_slack = np.zeros(tokens.shape + (model.decoder.W_U.shape[1],))
        for z, q, k, v, W_O in heads:
            zd = dense_attend(q, k, v, "causal", FLOAT64)
            mass = dense_attend(
                q, k, np.abs(v), "causal", FLOAT64
            )  # Σ_j α_j |v_j|, as float64 has it
            bound = 2.5 * gamma(n + 2) * mass + 2.0**-1000
            same = (z == zd) | (np.abs(z - zd) <= bound)
            if not same.all():
                counts.float_differ += 1
                counts.note(
                    f"{family}: a head output off the dense one by more than float64's error bound"
                )
            logit_slack += (bound @ np.abs(W_O)) @ np.abs(model.decoder.W_U)
    counts.float_positions += tokens.size
    differ = blocked != dense
    if differ.any():
        with np.errstate(all="ignore"), use_algorithm("reference"):
            logits = residual_stream(model, tokens, FLOAT64) @ model.decoder.W_U + model.decoder.b_U
        top = np.sort(logits, axis=-1)
        margin = top[..., -1] - top[..., -2]
        ambiguous = differ & ~(
            margin > 4 * logit_slack.max(axis=-1) + 4 * 2.0**-52 * np.abs(top[..., -1])
        )
        counts.ambiguous += int(ambiguous.sum())
        real = differ & ~ambiguous
        if real.any():
            counts.float_differ += int(real.sum())
            row, pos = map(int, np.argwhere(real)[0])
            counts.note(
                f"{family}: float64 output at input {row} position {pos + 1}: "
                f"blocked {int(blocked[row, pos])}, dense {int(dense[row, pos])}:\n  "
                + describe(model, case.bits)
            )


def run_family(family: str, start: int, count: int) -> Counts:
    """Models start .. start+count−1 of `family` (model i from the seed (family's index, i))."""
    counts = Counts()
    index = list(FAMILIES).index(family)
    for i in range(start, start + count):
        case = FAMILIES[family](np.random.default_rng([index, i]))
        (check_float if case.kind == "float" else check_exact)(case, counts, family)
        counts.models += 1
    return counts


def assert_sound(family: str, counts: Counts) -> None:
    assert counts.failures == 0 and counts.exact_evaluator_errors == 0, "\n".join(counts.examples)
    assert counts.shortcut[SHORTCUT[family]] > 0, (
        f"{family} never reached its shortcut: {counts.shortcut}"
    )
    assert counts.certificates + counts.float_positions > 0, f"{family} checked nothing"


@pytest.mark.parametrize("family", list(FAMILIES))
def test_fast_path_family(family):
    start = time.perf_counter()
    counts = run_family(family, 0, FAST_MODELS)
    print("\n" + counts.line(family, time.perf_counter() - start))
    assert counts.models == FAST_MODELS
    assert_sound(family, counts)


@pytest.mark.slow
@pytest.mark.parametrize("family", list(FAMILIES))
def test_fast_path_family_many_models(family):
    start = time.perf_counter()
    share = -(-SLOW_MODELS // SLOW_WORKERS)
    jobs = [(family, w * share, min(share, SLOW_MODELS - w * share)) for w in range(SLOW_WORKERS)]
    counts = Counts()
    with multiprocessing.get_context("spawn").Pool(SLOW_WORKERS) as pool:
        for part in pool.starmap(run_family, [job for job in jobs if job[2] > 0]):
            counts.merge(part)
    print("\n" + counts.line(family, time.perf_counter() - start))
    for text in counts.examples:
        print(text)
    assert counts.models == SLOW_MODELS
    assert_sound(family, counts)


def test_a_rejection_reports_the_same_witness_under_either_algorithm():
    """score-tame model 5798 (found by the slow set): at p = 5 the blocked bounds prove position 5
    wrong while the reference's leave it open and prove position 20 wrong; the witness is the first
    position where the exact model errs (certify.prove_chunk decides the open ones before it), so
    both report position 5."""
    counts = Counts()
    case = FAMILIES["score-tame"](np.random.default_rng([list(FAMILIES).index("score-tame"), 5798]))
    check_exact(case, counts, "score-tame")
    assert counts.certificates == 1 and counts.certificates_differ == 0, counts.examples
