"""Run a model against a task's reference on an input set and certify what it does.

The input set is a callable returning an iterator of (family, tokens) chunks, so exhaustive sets of
millions of sequences are streamed and re-streamed, never held in memory. A certificate says what
these four passes find (the reference algorithm, core.attention.settings, runs them one after
another; the default runs them in one streaming pass, _one_pass, with the same result):

1. float64: errors, per-family counts, the first counterexample (this is "checked").
2. fixed:p search: the smallest p with no *confirmed* error. Candidate p starts at 1; the fast
   float64 emulation of fixed:p points at inputs that may be wrong, and p is rejected only when the
   exact fixed:p model (rigorous bounds, else the exact evaluator of
   headcount.core.passes.exact_fixed) is proven wrong on one of them. Every rejected p is reported
   with that input (``rejected``: Rejection records of p, family, input, position, expected, got;
   for a causal model the input is the prefix up to the wrong position).
3. certification at that p: every position's output of the exact fixed:p model is proven — by the
   rigorous bounds of headcount.core.passes.bounds, or, where they leave it open, by the exact
   evaluator (within a work limit). A position proven wrong rejects p (reported too) and the pass
   restarts at p + 1 (the error count need not be monotone in p); positions left open are counted as
   ``uncertified_positions``.
4. IEEE dtypes: which of float16, bfloat16, float32, float64 give zero errors (stops at a type's
   first error; float64 is pass 1's count).

So `precision_bits` is the smallest p not rejected by a proven error; with
`proven_at_precision_bits` true, the exact fixed:p model is proven right on every input checked at
that p, and `certified` is that proof together with a float64 pass without errors (Certificate
states the rule).

A reference may answer IGNORE at a position that is not scored (the hop-count token of the k-hop
layout, headcount.induction.layouts): every pass skips it — it is not counted in positions_checked
or the errors, never a counterexample or a rejection, never open (not in uncertified_positions), and
the exact evaluator never spends work on it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from headcount.common.errors import InputError
from headcount.common.progress import Progress, ProgressBar, progress_bar
from headcount.core.attention import current_algorithm
from headcount.core.certify.certificate import (  # noqa: F401 — re-exported: their home before the split
    IGNORE,
    MAX_BITS,
    Certificate,
    Counterexample,
    InputStream,
    Reference,
    Rejection,
    Tally,
    rejection,
    settled,
)
from headcount.core.certify.checkpoint import Checkpoint, pass_state, restore_pass
from headcount.core.certify.evaluate import (
    Model,
    WorkBudget,
    certified_predict,
    emulate,
    fixed_predict,
    prefix_parts,
)
from headcount.core.numbers import FLOAT64, IEEE_DTYPES, Precision, fixed

CONFIRM_ROWS = 16  # inputs of a chunk the search tries to confirm an emulated error on, per p


EMULATE_PREFIX = (
    1024  # positions of a long causal input emulated first (a multiple of the attention block)
)


def _first_positions(model: Model, tokens: np.ndarray) -> int | None:
    """How many first positions a search on `tokens` looks at first, or None: a causal model's
    outputs there depend on them only, with the same bits — on long inputs the first EMULATE_PREFIX
    (the blocked pass's query blocks there are the same), on rows that share prefixes the first half
    (the prefix pass computes each position from its own prefix, whatever follows) — and most errors
    of a too-small p show early."""
    if model.mask != "causal" or current_algorithm() == "reference":
        return None
    if tokens.shape[1] >= 2 * EMULATE_PREFIX:
        return EMULATE_PREFIX
    if tokens.shape[1] >= 4 and prefix_parts(model, tokens) is not None:
        return tokens.shape[1] // 2
    return None


def _emulated_wrong(
    model: Model, tokens: np.ndarray, target: np.ndarray, prec: Precision
) -> np.ndarray:
    return settled(target, emulate(model, tokens, prec))[0] != target


def emulation_errs(model: Model, tokens: np.ndarray, target: np.ndarray, prec: Precision) -> bool:
    """Whether the float emulation of `prec` errs anywhere on the chunk (on a long causal input the
    first positions are tried first: an error there settles it)."""
    head = _first_positions(model, tokens)
    if head is not None:
        if _emulated_wrong(model, tokens[:, :head], target[:, :head], prec).any():
            return True
    return bool(_emulated_wrong(model, tokens, target, prec).any())


def confirmed_error(
    model: Model, tokens: np.ndarray, target: np.ndarray, p: int, family: str | None = None
) -> Rejection | None:
    """An input on which the exact fixed:p model is proven wrong, among those whose float64
    emulation is wrong (at most CONFIRM_ROWS of them, earliest first error first); None if none is
    proven (the emulation's errors were its own). A causal model's output at position i depends on
    the first i tokens only, so each suspect is confirmed on its prefix up to its first emulated
    error — cheap at any n — and that prefix is the input reported (the full input errs at the same
    position). On a long causal input the suspects with an error among the first positions
    (_first_positions) come first in that order, so they are tried first, and the whole input is
    emulated only when they settle nothing."""
    tried = 0
    head = _first_positions(model, tokens)
    if head is not None:
        wrong = _emulated_wrong(model, tokens[:, :head], target[:, :head], fixed(p))
        found, tried = _confirm(model, tokens, target, wrong, p, family)
        if found is not None or tried >= CONFIRM_ROWS:
            return found
    wrong = _emulated_wrong(model, tokens, target, fixed(p))
    return _confirm(model, tokens, target, wrong, p, family, skip=tried)[0]


def _confirm(
    model: Model,
    tokens: np.ndarray,
    target: np.ndarray,
    wrong: np.ndarray,
    p: int,
    family: str | None,
    skip: int = 0,
) -> tuple[Rejection | None, int]:
    """confirmed_error on the suspects of `wrong` [rows positions] (the positions may be a first
    part of the input), passing over the first `skip` of them (tried already): (the rejection or
    None, how many suspects were tried in all)."""
    suspects = np.flatnonzero(wrong.any(axis=1))
    first = wrong[suspects].argmax(axis=1)
    order = list(zip(suspects[np.argsort(first, kind="stable")], np.sort(first, kind="stable")))
    order = order[:CONFIRM_ROWS]
    for row, position in order[skip:]:
        end = tokens.shape[1] if model.mask == "full" else int(position) + 1
        prefix, expected = tokens[row : row + 1, :end], target[row : row + 1, :end]
        bounded = settled(expected, *certified_predict(model, prefix, fixed(p)))
        got, decided = fixed_predict(model, prefix, p, proven_in=bounded)
        proven_wrong = decided & (got != expected)
        if proven_wrong.any():
            return rejection(p, prefix, expected, got, proven_wrong, family), len(order)
    return None, len(order)


def minimal_precision_bits(
    model: Model, tokens: np.ndarray, target: np.ndarray, start: int = 1
) -> int | None:
    """Smallest p ≥ start at which the exact fixed:p model reproduces `target` on `tokens` (None if
    p > 60). A p is passed over as soon as an error is proven (cheaply, by confirmed_error or the
    bounds); the exact evaluator runs without a work limit only at a p where nothing is proven
    wrong: small input sets."""
    for p in range(start, MAX_BITS + 1):
        if confirmed_error(model, tokens, target, p) is not None:
            continue
        got, proven = settled(target, *certified_predict(model, tokens, fixed(p)))
        if np.any(proven & (got != target)):
            continue
        got, decided = fixed_predict(
            model, tokens, p, budget=WorkBudget(None), proven_in=(got, proven)
        )
        if decided.all() and np.array_equal(got, target):
            return p
    return None


def float64_outputs(model: Model, tokens: np.ndarray) -> np.ndarray:
    """Pass 1's float64 outputs: overflow and NaN are that type's behaviour (they count as errors
    where they change an output), not warnings."""
    with np.errstate(all="ignore"):
        return emulate(model, tokens, FLOAT64)


def _search_pass(
    model: Model, inputs: InputStream, reference: Reference, tally: Tally, bar: ProgressBar
) -> int:
    """Passes 1 and 2 of the module docstring; returns the candidate p (MAX_BITS + 1 if none is
    left)."""
    candidate = 1
    for family, tokens in inputs():
        target = reference(tokens)
        tally.count(family, tokens, target, float64_outputs(model, tokens))
        candidate = climb(model, tokens, target, candidate, family, tally)
        bar.update(completed=tally.inputs_checked)
    return candidate


def climb(
    model: Model, tokens: np.ndarray, target: np.ndarray, p: int, family: str, tally: Tally
) -> int:
    """Pass 2 on one chunk: the candidate p rises while an error is confirmed at it (each one
    recorded)."""
    while p <= MAX_BITS and (found := confirmed_error(model, tokens, target, p, family)):
        tally.rejected.append(found)
        p += 1
    return p


def prove_chunk(
    model: Model, tokens: np.ndarray, target: np.ndarray, p: int, budget: WorkBudget
) -> tuple[np.ndarray, np.ndarray, int]:
    """(got, proven, exact) on one chunk at p: the rigorous bounds, then the exact evaluator on the
    open positions while `budget` lasts; `exact` counts the positions the evaluator settled. Once a
    position is proven wrong p is settled, and only the open positions before the first one (row by
    row) are decided: the rejection then reports the first position where the exact model errs,
    whichever bounds proved what (within the budget, the same witness under either algorithm)."""
    got, proven = settled(target, *certified_predict(model, tokens, fixed(p)))
    wrong = proven & (got != target)
    ask = ~proven
    if wrong.any():
        row, position = map(int, np.argwhere(wrong)[0])
        ask[row, position:] = False
        ask[row + 1 :] = False
    exact = 0
    if ask.any():  # the exact evaluator decides them
        rows = np.flatnonzero(ask.any(axis=1))
        before = int(ask[rows].sum())
        sub, sub_proven = fixed_predict(
            model, tokens[rows], p, budget=budget, proven_in=(got[rows], proven[rows] | ~ask[rows])
        )
        got[rows], proven[rows] = sub, proven[rows] | (sub_proven & ask[rows])
        exact = before - int((ask[rows] & ~sub_proven).sum())
    return got, proven, exact


def _finish_proof(tally: Tally, p: int, uncertified: int, exact: int) -> None:
    """Pass 3's fields once p is not rejected."""
    # 0 errors at p is known only where every position is proven; open positions leave it unknown
    # (None)
    tally.precision_bits, tally.errors_at_precision_bits = p, 0 if uncertified == 0 else None
    tally.uncertified_positions, tally.exact_positions = uncertified, exact
    tally.proven_at_precision_bits = (
        uncertified == 0
    )  # certified also needs errors == 0 (Certificate)


def _certify_pass(
    model: Model, inputs: InputStream, reference: Reference, tally: Tally, p: int
) -> bool:
    """Pass 3 at p: True when no position is proven wrong (the proof's fields filled in), False
    after recording the proven error that rejects p."""
    uncertified = exact = 0
    budget = WorkBudget()
    for family, tokens in inputs():
        target = reference(tokens)
        got, proven, settled = prove_chunk(model, tokens, target, p, budget)
        exact += settled
        wrong = proven & (got != target)
        if wrong.any():
            tally.rejected.append(rejection(p, tokens, target, got, wrong, family))
            return False
        uncertified += int((~proven).sum())
    _finish_proof(tally, p, uncertified, exact)
    return True


def certify_model(
    model: Model,
    inputs: InputStream,
    reference: Reference,
    *,
    dtypes: bool = True,
    progress: Progress = False,
    total: int | None = None,
    checkpoint: Checkpoint | None = None,
) -> Certificate:
    """The certificate of the module docstring, by one streaming pass (_one_pass), or under the
    reference algorithm (core.attention.settings) by the four separate passes; both give the same
    certificate. progress (common.progress): the inputs checked of `total` (None: not known).
    checkpoint (core.certify.checkpoint): the streaming pass's state is stored after every chunk,
    and a run resumes after the last chunk stored."""
    tally = Tally()
    with progress_bar(progress, "certify", total, unit="input") as bar:
        if current_algorithm() == "reference":
            if checkpoint is not None:
                raise InputError("a checkpoint needs the streaming pass, not the reference one")
            _reference_passes(model, inputs, reference, tally, dtypes, bar)
        else:
            _one_pass(model, inputs, reference, tally, dtypes, bar, checkpoint)
    return tally.freeze()


def _reference_passes(
    model: Model,
    inputs: InputStream,
    reference: Reference,
    tally: Tally,
    dtypes: bool,
    bar: ProgressBar,
) -> None:
    """The four passes of the module docstring, one after another (the first release's
    algorithm)."""
    clock = time.perf_counter()
    candidate = _search_pass(model, inputs, reference, tally, bar)
    tally.seconds["float64_and_search"] = time.perf_counter() - clock

    clock = time.perf_counter()
    while candidate <= MAX_BITS and not _certify_pass(model, inputs, reference, tally, candidate):
        candidate += 1
    tally.seconds["certify_at_precision_bits"] = time.perf_counter() - clock

    if dtypes:
        clock = time.perf_counter()
        tally.dtypes_exact = tuple(
            name for name in IEEE_DTYPES if _exact_in(model, inputs, reference, Precision(name))
        )
        tally.seconds["dtypes"] = time.perf_counter() - clock


def _exact_in(model: Model, inputs: InputStream, reference: Reference, prec: Precision) -> bool:
    with np.errstate(all="ignore"):  # float16 overflow is that type's behaviour, not a failure here
        for _, tokens in inputs():
            target = reference(tokens)
            if np.any(settled(target, emulate(model, tokens, prec))[0] != target):
                return False
        return True


@dataclass
class Proof:
    """Pass 3 at p, run chunk by chunk alongside the search: the chunks proven so far are a prefix
    of the stream, with one budget for the exact evaluator spent in stream order, as pass 3 spends
    it."""

    p: int
    budget: WorkBudget = field(default_factory=WorkBudget)
    uncertified: int = 0
    exact: int = 0
    rejection: Rejection | None = (
        None  # the first chunk proven wrong at p: where pass 3 would reject p
    )

    def add(self, model: Model, family: str, tokens: np.ndarray, target: np.ndarray) -> bool:
        """Prove one more chunk; True when every position of it is proven right."""
        if self.rejection is not None:  # p is settled already; later chunks need no proof at p
            return False
        got, proven, exact = prove_chunk(model, tokens, target, self.p, self.budget)
        wrong = proven & (got != target)
        if wrong.any():
            self.rejection = rejection(self.p, tokens, target, got, wrong, family)
            return False
        self.exact += exact
        self.uncertified += int((~proven).sum())
        return bool(proven.all())


def _one_pass(
    model: Model,
    inputs: InputStream,
    reference: Reference,
    tally: Tally,
    dtypes: bool,
    bar: ProgressBar,
    checkpoint: Checkpoint | None = None,
) -> None:
    """The four passes' certificate in one pass over the inputs. Each chunk is evaluated in float64
    once (pass 1, and the float64 dtype check), proven at the current candidate p (pass 3, kept
    chunk by chunk in a Proof), and searched for a confirmed error at p (pass 2) only where that
    proof leaves a position open or wrong: a chunk proven right at p has no input on which the exact
    fixed:p model is wrong, so confirmed_error could find nothing there (the proofs are sound). The
    first chunk is searched first, as the candidate usually climbs there. When the candidate rises
    at chunk c, the proof restarts at the new p with chunks 0..c (re-streamed), so the budget is
    spent in the order pass 3 spends it. At the end the proof at the final candidate is pass 3's; if
    it was rejected, pass 3 goes on from p + 1 as it would. The other dtypes are checked chunk by
    chunk until their first error."""
    run = OnePass(model, inputs, reference, tally, dtypes)
    saved = None if checkpoint is None else checkpoint.last()
    if saved is not None:
        run.restore(saved[1])
    done = -1 if saved is None else saved[0]  # chunks 0..done are in the restored state
    for index, (family, tokens) in enumerate(inputs()):
        if index > done:
            run.chunk(index, family, tokens)
            if checkpoint is not None:
                checkpoint.save(index, run.state())
        bar.update(completed=tally.inputs_checked)
    run.finish()


@dataclass
class OnePass:
    """_one_pass's state between chunks: the candidate p and its proof so far, each other dtype's
    verdict (None: no error yet), and the seconds each part took."""

    model: Model
    inputs: InputStream
    reference: Reference
    tally: Tally
    dtypes: bool
    candidate: int = 1
    proof: Proof = field(default_factory=lambda: Proof(1))
    exact_in: dict[str, bool | None] = field(init=False)
    seconds: dict[str, float] = field(init=False)

    def __post_init__(self) -> None:
        self.seconds = {"float64_and_search": 0.0, "certify_at_precision_bits": 0.0}
        if self.dtypes:
            self.seconds["dtypes"] = 0.0
        others = [name for name in IEEE_DTYPES if name != "float64"]
        self.exact_in = dict.fromkeys(others) if self.dtypes else {}

    @contextmanager
    def timed(self, part: str) -> Iterator[None]:
        clock = time.perf_counter()
        yield
        self.seconds[part] += time.perf_counter() - clock

    def chunk(self, index: int, family: str, tokens: np.ndarray) -> None:
        """Chunk `index` of the stream: float64 (pass 1), the other dtypes, then the proof at the
        candidate (pass 3) and, where it leaves a position open or wrong, the search (pass 2)."""
        with self.timed("float64_and_search"):
            target = self.reference(tokens)
            self.tally.count(family, tokens, target, float64_outputs(self.model, tokens))
        with self.timed("dtypes" if self.dtypes else "float64_and_search"):
            self._check_dtypes(tokens, target)
        proven_right = False
        if index > 0 and self.candidate <= MAX_BITS:
            with self.timed("certify_at_precision_bits"):
                proven_right = self.proof.add(self.model, family, tokens, target)
        if not proven_right:
            self._search(index, family, tokens, target)

    def state(self) -> dict[str, Any]:
        """Everything carried between chunks, as JSON (core.certify.checkpoint)."""
        p = self.proof
        proof = (p.p, p.budget.remaining, p.uncertified, p.exact, p.rejection)
        return pass_state(self.tally, self.candidate, proof, self.exact_in, self.seconds)

    def restore(self, state: dict[str, Any]) -> None:
        """Put a state() back (a checkpoint's), so the next chunk goes on from it."""
        self.candidate, proof, self.exact_in = restore_pass(state, self.tally, self.exact_in)
        p, budget, uncertified, exact, rejected = proof
        self.proof = Proof(p, WorkBudget(budget), uncertified, exact, rejected)
        self.seconds.update(state["seconds"])

    def _check_dtypes(self, tokens: np.ndarray, target: np.ndarray) -> None:
        """Each other dtype without an error so far is emulated on the chunk; an error settles
        it."""
        with np.errstate(
            all="ignore"
        ):  # float16 overflow is that type's behaviour, not a failure here
            for name in [name for name, exact in self.exact_in.items() if exact is None]:
                if emulation_errs(self.model, tokens, target, Precision(name)):
                    self.exact_in[name] = False

    def _search(self, index: int, family: str, tokens: np.ndarray, target: np.ndarray) -> None:
        """Pass 2 on chunk `index`; when the candidate rises (or on the first chunk) the proof
        starts over at the new p with chunks 0..index, in stream order."""
        with self.timed("float64_and_search"):
            before = self.candidate
            self.candidate = climb(self.model, tokens, target, before, family, self.tally)
        with self.timed("certify_at_precision_bits"):
            if (self.candidate != before or index == 0) and self.candidate <= MAX_BITS:
                self.proof = Proof(self.candidate)
                for _, (earlier_family, earlier) in zip(range(index), self.inputs()):
                    self.proof.add(self.model, earlier_family, earlier, self.reference(earlier))
                self.proof.add(self.model, family, tokens, target)

    def finish(self) -> None:
        """Pass 3's fields from the proof at the final candidate (or pass 3 from p + 1 when it was
        rejected), the dtypes found exact, and the seconds."""
        with self.timed("certify_at_precision_bits"):
            if self.candidate <= MAX_BITS:
                self._settle_candidate()
        if self.dtypes:
            self.exact_in["float64"] = self.tally.errors == 0
            self.tally.dtypes_exact = tuple(
                name for name in IEEE_DTYPES if self.exact_in[name] is not False
            )
        self.tally.seconds.update(self.seconds)

    def _settle_candidate(self) -> None:
        """Pass 3 at the final candidate: its proof's fields, or its rejection and pass 3 from p +
        1."""
        proof, tally = self.proof, self.tally
        if proof.rejection is None:
            _finish_proof(tally, self.candidate, proof.uncertified, proof.exact)
            return
        tally.rejected.append(proof.rejection)
        p = self.candidate + 1
        while p <= MAX_BITS and not _certify_pass(
            self.model, self.inputs, self.reference, tally, p
        ):
            p += 1
        self.candidate = p
