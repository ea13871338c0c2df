"""What the INDEX tools report, as typed frozen records: check_protocol's ProtocolCheck (with the
first UnexplainedPair) and refute's Refutation (with Searched, the record of what each method
covered: CollisionSearch, ExhaustiveSearch, GuidedSearch; and the wrong input's Evidence or
CollisionEvidence)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from headcount.common.jsonable import JsonResult
from headcount.induction.lower_bound.floor import IndexFloor, index_floor
from headcount.induction.task import index_token_text

# ---------------------------------------------------------------------------------------------
# check_protocol
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class UnexplainedPair(JsonResult):
    """The first disagreement check_protocol could not explain: the pair (f as a bit string, i*),
    Bob's and the model's answers (as printed), and whether a float64 error bound was too large to
    count (module docstring of .error_bounds)."""

    f: str
    i_star: int
    bob_output: str
    model_output: str
    float_limited: bool


@dataclass(frozen=True)
class ProtocolCheck:
    """check_protocol's result: the message length (exact, the seed's accounting, the worst case),
    the form checked (`model_form`), how many pairs agree, how many disagreements are explained by
    rounding ties, the model's and Bob's own correctness, and (`floor`, also in the JSON) the INDEX
    error floor (.floor)."""

    k: int
    n: int
    heads: int
    d_model: int
    d_head: int
    precision_bits: int
    message_bits: int
    seed_message_bits: int
    worst_case_message_bits: int
    model_form: str
    exhaustive: bool
    seed: int | None
    pairs_checked: int
    agreements: int
    disagreements: int
    disagreements_explained: int
    model_correct: int
    protocol_correct: int  # pairs where Bob's own output is f_{i*}
    bound_violations: int
    max_bob_error: float
    max_error_bound: (
        float  # largest T_Bob; +inf (null in JSON) where float64 cannot bound Bob's error
    )
    seconds: float
    first_unexplained: UnexplainedPair | None = None
    # Unexplained disagreements where a float64 error bound was too large (not ≤ 2^-p·FLOAT_SHARE)
    # to count as an explanation: a float artifact is possible there (large p or large values).
    disagreements_float_limited: int = 0
    # Disagreements the float check could not classify, re-decided exactly (arb balls).
    disagreements_decided_exactly: int = 0
    # Disagreements left unexplained because the exact re-decision budget ran out or could not
    # settle them.
    disagreements_undecided: int = 0

    @property
    def exact(self) -> bool:
        """True when every disagreement is provably explained by a rounding tie and no bound was
        violated."""
        return self.disagreements == self.disagreements_explained and self.bound_violations == 0

    @property
    def floor(self) -> IndexFloor:
        """The INDEX error floor for this message length, the model's and Bob's errors against it
        (.floor)."""
        n = self.pairs_checked
        wrong, bob_wrong = n - self.model_correct, n - self.protocol_correct
        return index_floor(
            self.message_bits, self.k, n, wrong, bob_wrong, self.disagreements, self.exhaustive
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "n": self.n,
            "heads": self.heads,
            "dim": self.d_model,
            "d_head": self.d_head,
            "precision_bits": self.precision_bits,
            "message_bits": self.message_bits,
            "seed_message_bits": self.seed_message_bits,
            "worst_case_message_bits": self.worst_case_message_bits,
            "model_form": self.model_form,
            "exhaustive": self.exhaustive,
            "seed": self.seed,
            "pairs_checked": self.pairs_checked,
            "agreements": self.agreements,
            "disagreements": self.disagreements,
            "disagreements_explained": self.disagreements_explained,
            "exact": self.exact,
            "model_correct": self.model_correct,
            "protocol_correct": self.protocol_correct,
            "bound_violations": self.bound_violations,
            "max_bob_error": self.max_bob_error,
            "max_error_bound": self.max_error_bound
            if math.isfinite(self.max_error_bound)
            else None,
            "disagreements_float_limited": self.disagreements_float_limited,
            "disagreements_decided_exactly": self.disagreements_decided_exactly,
            "disagreements_undecided": self.disagreements_undecided,
            "seconds": round(self.seconds, 3),
            "first_unexplained": None
            if self.first_unexplained is None
            else self.first_unexplained.to_json(),
        } | self.floor.to_json()


# ---------------------------------------------------------------------------------------------
# refute
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CollisionSearch(JsonResult):
    """The collision search: which strings f ("all 2^k" or "seeded random"), messages computed,
    equal messages of different strings tried, INDEX inputs run through the model to confirm."""

    strings: str
    messages: int = 0
    colliding_pairs_tried: int = 0
    inputs_confirmed: int = 0


@dataclass(frozen=True)
class ExhaustiveSearch(JsonResult):
    """The exhaustive search: INDEX inputs run through the model, out of the `family` of k·2^k."""

    inputs: int = 0
    family: int = 0


@dataclass(frozen=True)
class GuidedSearch(JsonResult):
    """The guided search: inputs evaluated (random ones among them), local-search steps, restarts,
    and apparent errors run through the model to confirm."""

    inputs: int = 0
    random_inputs: int = 0
    local_search_steps: int = 0
    restarts: int = 0
    confirmations: int = 0


@dataclass(frozen=True)
class Searched:
    """What refute searched: its seed and budget, the searched table's message length against k
    (under setup.GUIDE_FORM the guide's), and a record per method that ran (collision, then
    exhaustive or guided)."""

    seed: int
    budget: int
    message_bits: int
    k: int
    collision: CollisionSearch | None = None
    exhaustive: ExhaustiveSearch | None = None
    guided: GuidedSearch | None = None

    @property
    def methods(self) -> list[str]:
        return [m for m in ("collision", "exhaustive", "guided") if getattr(self, m) is not None]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "seed": self.seed,
            "budget": self.budget,
            "message_bits": self.message_bits,
            "k": self.k,
            "methods": self.methods,
        }
        return out | {m: getattr(self, m).to_json() for m in self.methods}


@dataclass(frozen=True)
class Evidence(JsonResult):
    """The wrong INDEX input as (f as a bit string, i*)."""

    f: str
    i_star: int


@dataclass(frozen=True)
class CollisionEvidence(JsonResult):
    """Two strings f ≠ f' with equal messages, the i* where they differ and which of the two inputs
    the model answers wrongly; the shared message (bits, digest, first values) and Bob's common
    answer."""

    f: str
    f_prime: str
    i_star: int
    wrong_input: str
    message_bits: int
    k: int
    message_digest: str
    message_first_values: tuple[float, ...]
    bob_output: str


@dataclass(frozen=True)
class Refutation:
    """refute's result. When found, `tokens` is σ (token ids; `input` prints them "0"/"1"/"?"),
    `position` is N (1-based), and the model — run by predict at fixed:p — outputs `model_output`
    there instead of `expected` (both as printed); `message_bits` is None under setup.GUIDE_FORM
    (module docstring of .refute)."""

    found: bool
    method: str | None
    k: int
    n: int
    precision_bits: int
    message_bits: int | None
    model_form: str
    searched: Searched
    tokens: tuple[int, ...] | None = None
    position: int | None = None
    expected: str | None = None
    model_output: str | None = None
    evidence: Evidence | CollisionEvidence | None = None
    seconds: float = 0.0

    @property
    def input(self) -> list[str] | None:
        return None if self.tokens is None else [index_token_text(t) for t in self.tokens]

    def to_json(self) -> dict[str, Any]:
        return {
            "found": self.found,
            "method": self.method,
            "k": self.k,
            "n": self.n,
            "precision_bits": self.precision_bits,
            "message_bits": self.message_bits,
            "model_form": self.model_form,
            "searched": self.searched.to_json(),
            "input": self.input,
            "position": self.position,
            "expected": self.expected,
            "model_output": self.model_output,
            "evidence": None if self.evidence is None else self.evidence.to_json(),
            "seconds": round(self.seconds, 3),
        }
