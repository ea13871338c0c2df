"""The single-head verification behind `headcount minmax verify` (spec/minmax.md).

``verify_single_head`` decides whether a given single head + its two classifiers compute min and
max on every list in [M]^n (a ``SingleHeadVerification``): a verdict per task from the exact
one-head verifier (verify.verify_exact_one_head, histogram linearity) or brute force
(brute.verify_brute, every multiset), with the head's lower-bound quantities beside them (its
longest monotone run and Lemma 6, lower_bound.py). Every verdict covers all C(n+M−1, n) multisets:
``scope`` is "exhaustive". The construction's certificate (several heads, `minmax certify`) is
certify.py's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from headcount.common.errors import InputError, param
from headcount.common.jsonable import jsonable
from headcount.common.validate import check_choice
from headcount.minmax.brute import check_brute_resources, verify_brute
from headcount.minmax.exact_verify import (
    Verdict,
    check_counterexample_resources,
    check_exact_resources,
    scope_of,
    verify_exact_one_head,
)
from headcount.minmax.lower_bound import (
    Lemma6Quantities,
    MonotoneRun,
    lemma6_quantities,
    longest_monotone_run,
)
from headcount.minmax.model import Classifier, MinMaxModel, ModelSource, TokenHead
from headcount.minmax.task import check_sizes, count_multisets

#: `verify_single_head(method="brute")` enumerates at most this many multisets
BRUTE_MAX_INPUTS = 2_000_000
#: values whose exact bits the Lemma-6 quantities compute (one Fraction each): M·dim at most this
MAX_VALUE_ENTRIES = 2**24


@dataclass(frozen=True)
class SingleHeadVerification:
    """Does one head + two classifiers compute min and max on every input (``verify_single_head``;
    the JSON of `headcount minmax verify`): a verdict per task, with the head's monotone run and
    Lemma-6 quantities."""

    M: int
    n: int
    dim: int
    method: str  # "exact-histogram" | "brute-force"
    inputs_covered: int
    min: Verdict
    max: Verdict
    monotone_run: MonotoneRun
    lemma6: Lemma6Quantities

    @property
    def scope(self) -> str:
        return scope_of(self.min, self.max)

    def counterexample(self, task: str) -> tuple[int, ...] | None:
        """A wrong input for task "min" or "max", None when the classifier is right on every
        input."""
        v = self.min if task == "min" else self.max
        return None if v.correct else v.worst_input

    def to_json(self) -> dict[str, Any]:
        """Sizes, then per task errors (exact count under brute force; 0 or None otherwise), margin
        and counterexample, then scope, the monotone run and Lemma 6."""
        out: dict[str, Any] = {
            "M": self.M,
            "n": self.n,
            "heads": 1,
            "dim": self.dim,
            "method": self.method,
            "inputs_covered": self.inputs_covered,
        }
        for task, v in (("min", self.min), ("max", self.max)):
            out[f"errors_{task}"] = v.errors if v.errors is not None else (0 if v.correct else None)
            out[f"margin_{task}"] = v.margin
            out[f"counterexample_{task}"] = self.counterexample(task)
        out.update(scope=self.scope, monotone_run=self.monotone_run, lemma6=self.lemma6)
        return jsonable(out)


def _single_head_of(model: MinMaxModel, M: int) -> TokenHead:
    if model.layer.n_heads != 1:
        raise InputError(
            f"the model has {model.layer.n_heads} heads: verify is for a single head (use certify "
            "for layers)"
        )
    if model.layer.M != M:
        raise InputError(f"{param('M')} {M} does not match the model's M = {model.layer.M}")
    return model.layer.heads[0]


def verify_single_head(
    model: MinMaxModel | ModelSource, M: int, n: int, method: str = "exact"
) -> SingleHeadVerification:
    """Decide whether a single head + its two classifiers compute min and max on every list in
    [M]^n.

    method: "exact" (verify_exact_one_head: histogram linearity) or "brute" (verify_brute: every
    multiset, at most BRUTE_MAX_INPUTS). A ModelSource is loaded after the sizes and the method are
    checked."""
    check_sizes(M, n)
    check_choice("method", method, ("exact", "brute"))
    what = f"minmax verify ({method}) at {param('M')} {M} {param('n')} {n}"
    check_counterexample_resources(M, n, what)
    if method == "brute":
        check_brute_resources(M, n, 1, BRUTE_MAX_INPUTS, what)
    else:
        check_exact_resources(M, 1, what)
    if isinstance(model, ModelSource):
        if model.random_seed is not None and isinstance(model.dim, int):
            _check_values(M, model.dim, what)  # before the random head is drawn
        model = model.load(M)
    head = _single_head_of(model, M)
    _check_values(M, head.dim, what)
    covered = count_multisets(M, n)
    if method == "exact":
        verdicts = [verify_exact_one_head(head, c, t, n) for t, c in _classifiers(model)]
    else:
        verdicts = [verify_brute(model, c, t, n) for t, c in _classifiers(model)]
    return SingleHeadVerification(
        M,
        n,
        head.dim,
        "exact-histogram" if method == "exact" else "brute-force",
        covered,
        *verdicts,
        longest_monotone_run(head),
        lemma6_quantities(head, n),
    )


def _check_values(M: int, dim: int, what: str) -> None:
    """verify's bound on the head's values: M·dim ≤ MAX_VALUE_ENTRIES."""
    if M * dim > MAX_VALUE_ENTRIES:
        raise InputError(
            f"{what}: the head has M·dim = {M * dim} values; allowed up to {MAX_VALUE_ENTRIES} "
            f"(Lemma 6 computes each one's exact bits; lower {param('dim')})"
        )


def _classifiers(model: MinMaxModel) -> tuple[tuple[str, Classifier], tuple[str, Classifier]]:
    return ("min", model.classifier_min), ("max", model.classifier_max)
