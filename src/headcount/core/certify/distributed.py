"""Certification spread over workers — a Ray cluster, or this process (tests) — ending with the
certificate one process gives (certify._one_pass), field for field apart from the seconds.

Why not merge per-chunk certificates: one streaming pass is sequential in two places. The candidate
precision p climbs chunk by chunk (a chunk is searched at the p the chunks before it left, and the
errors confirmed need not be monotone in p), and the exact evaluator's budget is spent in stream
order (a row that does not fit is skipped, a later smaller one may still fit). Taking the max over
chunks of each chunk's smallest p, or a budget per chunk, can give another certificate. So:

1. Workers compute, for a run of chunks and a guessed p, each chunk's ChunkResult (chunk_results):
   pass 1's tally of the chunk and each other dtype's verdict (neither depends on p), the proof at
   p with a fresh budget (what it spent, whether a row did not fit), and the climb from p — p
   itself, without work, when the chunk is proven right at p: no error can be confirmed there,
   which is what _one_pass relies on too.
2. The coordinator (_Replay) runs _one_pass over the chunks in stream order with the same state,
   taking a chunk's result wherever it is what _one_pass computes there: its guess is the candidate
   (or the proof's p) at that point, and its proof's budget refused nothing and spent no more than
   the stream's budget has left, so the stream's budget takes the same rows in the same order.
   Anywhere else it computes the chunk itself (counted in `fallbacks`). When the candidate rises,
   the chunks are guessed again at the new p (chunk 0 is climbed from p = 1 by the coordinator
   first, as _one_pass searches it first).

The merge is therefore the replay itself: counts add (Tally.add), the first counterexample and
every rejection come in stream order, and p, the proof's fields and the budget follow the one
process's rules because they are its code. A task lost with its worker is submitted again
(Executor.result); results are pure functions of (chunks, guess), so a re-run gives the same.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from headcount.common.errors import InputError
from headcount.common.progress import Progress, progress_bar
from headcount.core.certify.certificate import (
    MAX_BITS,
    Certificate,
    InputStream,
    Reference,
    Rejection,
    Tally,
    rejection,
)
from headcount.core.certify.certify import (
    OnePass,
    Proof,
    climb,
    emulation_errs,
    float64_outputs,
    prove_chunk,
)
from headcount.core.certify.checkpoint import Checkpoint
from headcount.core.certify.evaluate import Model, WorkBudget
from headcount.core.numbers import IEEE_DTYPES, Precision

OTHER_DTYPES = tuple(name for name in IEEE_DTYPES if name != "float64")


@runtime_checkable
class RangedInputs(Protocol):
    """An input stream whose chunks start..stop a worker can make without the ones before them
    (an exhaustive range); any other stream is replayed from its start and the earlier chunks
    skipped."""

    def __call__(self) -> Iterator[tuple[str, np.ndarray]]: ...

    def chunks(self, start: int, stop: int) -> Iterator[tuple[str, np.ndarray]]: ...


def chunk_range(inputs: InputStream, start: int, stop: int) -> Iterator[tuple[str, np.ndarray]]:
    """Chunks start..stop-1 of the stream (fewer where it ends first)."""
    if isinstance(inputs, RangedInputs):
        return inputs.chunks(start, stop)
    return itertools.islice(inputs(), start, stop)


@dataclass(frozen=True)
class ChunkResult:
    """What a worker computed on one chunk at the guess p (module docstring). The tally and the
    dtype verdicts are None where the coordinator has them already (a second guess)."""

    index: int
    p: int
    tally: Tally | None
    dtype_errs: dict[str, bool | None] | None  # None for a dtype: not tried (it erred earlier)
    rejection: Rejection | None  # the proof at p: the first position proven wrong, if any
    uncertified: int
    exact: int
    proven_all: bool
    spent: int  # exact-evaluator work the proof took from a fresh WorkBudget
    refused: bool  # a row did not fit that budget
    climb_to: int  # pass 2 on this chunk from p: the candidate it leaves
    climbed: tuple[Rejection, ...]  # and what it rejected on the way

    def proof_fits(self, budget: WorkBudget) -> bool:
        """The stream's `budget` takes exactly the rows the fresh one took."""
        return not self.refused and budget.remaining is not None and self.spent <= budget.remaining


@dataclass(frozen=True)
class Job:
    """What every task of one certificate shares (sent to a cluster once)."""

    model: Model
    inputs: InputStream
    reference: Reference
    dtypes: bool


def chunk_results(job: Job, start: int, stop: int, p: int, counts_from: int) -> list[ChunkResult]:
    """The ChunkResults of chunks start..stop-1 at the guess p (p > MAX_BITS: no proof or climb);
    the tally and dtypes only for chunks ≥ counts_from. A dtype is not tried again after it erred
    on an earlier chunk of the range (the coordinator has that error first)."""
    model, reference = job.model, job.reference
    erred = dict.fromkeys(OTHER_DTYPES if job.dtypes else (), False)
    out = []
    for index, (family, tokens) in zip(range(start, stop), chunk_range(job.inputs, start, stop)):
        target = reference(tokens)
        tally, errs = None, None
        if index >= counts_from:
            tally = Tally()
            tally.count(family, tokens, target, float64_outputs(model, tokens))
            errs = _dtype_errs(model, tokens, target, erred)
        out.append(_proved(index, p, family, tokens, target, model, tally, errs))
    return out


def _dtype_errs(
    model: Model, tokens: np.ndarray, target: np.ndarray, erred: dict[str, bool]
) -> dict[str, bool | None]:
    errs: dict[str, bool | None] = {}
    with np.errstate(all="ignore"):  # float16 overflow is that type's behaviour, not a failure here
        for name in erred:
            if erred[name]:
                errs[name] = None
                continue
            errs[name] = emulation_errs(model, tokens, target, Precision(name))
            erred[name] = errs[name]
    return errs


def _proved(
    index: int,
    p: int,
    family: str,
    tokens: np.ndarray,
    target: np.ndarray,
    model: Model,
    tally: Tally | None,
    errs: dict[str, bool | None] | None,
) -> ChunkResult:
    """The proof at p with a fresh budget, and the climb from p where the proof leaves a position
    open or wrong (Proof.add and OnePass._search on one chunk)."""
    if p > MAX_BITS:
        return ChunkResult(index, p, tally, errs, None, 0, 0, False, 0, False, p, ())
    budget = WorkBudget()
    start = budget.remaining or 0
    got, proven, exact = prove_chunk(model, tokens, target, p, budget)
    spent = start - (budget.remaining or 0)
    wrong = proven & (got != target)
    found = rejection(p, tokens, target, got, wrong, family) if wrong.any() else None
    proven_all = found is None and bool(proven.all())
    climb_to, climbed = p, ()
    if not proven_all:
        side = Tally()
        climb_to = climb(model, tokens, target, p, family, side)
        climbed = tuple(side.rejected)
    uncertified = 0 if found is not None else int((~proven).sum())
    exact = 0 if found is not None else exact
    return ChunkResult(
        index, p, tally, errs, found, uncertified, exact, proven_all, spent, budget.refused,
        climb_to, climbed,
    )  # fmt: skip


class Executor(Protocol):
    """Where chunk_results runs: submit returns a handle, result its list (a lost task is run
    again), cancel drops a task whose result is no longer wanted."""

    workers: int
    tasks: int  # tasks run so far (a lost one counts again)

    def start(self, job: Job) -> None: ...

    def submit(self, start: int, stop: int, p: int, counts_from: int) -> Any: ...

    def result(self, handle: Any) -> list[ChunkResult]: ...

    def cancel(self, handle: Any) -> None: ...

    def close(self) -> None: ...


class InProcess:
    """chunk_results in this process, when its result is asked for: the coordinator's logic with no
    cluster (tests; `executor="local"` with speculation)."""

    def __init__(self, workers: int = 1):
        self.workers, self.job = workers, None
        self.tasks = 0

    def start(self, job: Job) -> None:
        self.job = job

    def submit(self, start: int, stop: int, p: int, counts_from: int) -> Any:
        return (start, stop, p, counts_from)

    def result(self, handle: Any) -> list[ChunkResult]:
        self.tasks += 1
        return chunk_results(self.job, *handle)

    def cancel(self, handle: Any) -> None:
        pass

    def close(self) -> None:
        pass


@dataclass
class _Speculation:
    """Results at the current guess p, asked for chunk by chunk: tasks of `per_task` chunks are
    submitted up to `window` tasks ahead of the chunk asked for; a new guess cancels the rest."""

    executor: Executor
    per_task: int = 1
    window: int = 4
    p: int | None = None
    counts_from: int = 1  # chunks before it have their tally and dtypes in the coordinator
    handles: dict[int, Any] = field(default_factory=dict)  # task start → handle
    done: dict[int, list[ChunkResult]] = field(default_factory=dict)
    end: int | None = None  # the first task start past the stream's end, once seen

    def get(self, index: int, p: int) -> ChunkResult:
        if p != self.p:
            for handle in self.handles.values():
                self.executor.cancel(handle)
            self.handles, self.done, self.p = {}, {}, p
        first = index - index % self.per_task
        for start in range(first, first + self.window * self.per_task, self.per_task):
            if (self.end is None or start < self.end) and start not in self.handles:
                if start not in self.done:
                    stop = start + self.per_task
                    self.handles[start] = self.executor.submit(start, stop, p, self.counts_from)
        if first not in self.done:
            self.done[first] = self.executor.result(self.handles.pop(first))
            if len(self.done[first]) < self.per_task:
                self.end = first + self.per_task
        for start in [s for s in self.done if s < first]:
            del self.done[start]
        return self.done[first][index - first]

    def close(self) -> None:
        for handle in self.handles.values():
            self.executor.cancel(handle)
        self.handles = {}


@dataclass
class SpreadStats:
    """How a spread certificate went: chunk steps the coordinator computed itself (a result that
    was not what the one process computes there), times the candidate rose after chunk 0 (each a
    new guess), and tasks run (a lost one counts again)."""

    fallbacks: int = 0
    rises: int = 0
    tasks: int = 0


@dataclass
class _Replay:
    """_one_pass on chunks 1, 2, … with the workers' results where they are what it computes
    (module docstring); `run` holds the state, and computes what no result answers."""

    run: OnePass
    speculation: _Speculation
    stats: SpreadStats = field(default_factory=lambda: SpreadStats())

    def chunk(self, index: int, family: str, tokens: np.ndarray) -> None:
        run = self.run
        guess = run.candidate if run.candidate <= MAX_BITS else MAX_BITS + 1
        result = self.speculation.get(index, guess)
        with run.timed("float64_and_search"):
            self._counts(index, tokens, result)
        proven_right = False
        if run.candidate <= MAX_BITS:
            with run.timed("certify_at_precision_bits"):
                proven_right = self._prove(family, tokens, result)
        if not proven_right:
            self._search(index, family, tokens, result)

    def _counts(self, index: int, tokens: np.ndarray, result: ChunkResult) -> None:
        run = self.run
        if result.tally is None:  # asked at an earlier guess than this chunk's first
            raise AssertionError(f"chunk {index} has no counts")  # pragma: no cover
        run.tally.add(result.tally)
        self.speculation.counts_from = index + 1
        for name, exact in run.exact_in.items():
            if exact is None:
                err = (result.dtype_errs or {}).get(name)
                if err is None:  # not tried by the worker (cannot happen: module docstring)
                    err = emulation_errs(run.model, tokens, run.reference(tokens), Precision(name))
                if err:
                    run.exact_in[name] = False

    def _prove(self, family: str, tokens: np.ndarray, result: ChunkResult) -> bool:
        """Proof.add, from `result` where it is the same."""
        proof, run = self.run.proof, self.run
        if proof.rejection is not None:
            return False
        if result.p != proof.p or not result.proof_fits(proof.budget):
            self.stats.fallbacks += 1
            return proof.add(run.model, family, tokens, run.reference(tokens))
        proof.budget.remaining -= result.spent
        if result.rejection is not None:
            proof.rejection = result.rejection
            return False
        proof.exact += result.exact
        proof.uncertified += result.uncertified
        return result.proven_all

    def _search(self, index: int, family: str, tokens: np.ndarray, result: ChunkResult) -> None:
        """OnePass._search, from `result` where its guess is the candidate."""
        run = self.run
        with run.timed("float64_and_search"):
            before = run.candidate
            if result.p == before:
                run.candidate = result.climb_to
                run.tally.rejected.extend(result.climbed)
            else:
                self.stats.fallbacks += 1
                target = run.reference(tokens)
                run.candidate = climb(run.model, tokens, target, before, family, run.tally)
        if run.candidate != before and run.candidate <= MAX_BITS:
            self.stats.rises += 1
            with run.timed("certify_at_precision_bits"):
                run.proof = Proof(run.candidate)
                earlier = zip(range(index), run.inputs())
                for k, (earlier_family, earlier_tokens) in earlier:
                    result = self.speculation.get(k, run.candidate)
                    self._prove(earlier_family, earlier_tokens, result)
                self._prove(family, tokens, self.speculation.get(index, run.candidate))


def certify_spread(
    model: Model,
    inputs: InputStream,
    reference: Reference,
    executor: Executor,
    *,
    dtypes: bool = True,
    progress: Progress = False,
    total: int | None = None,
    checkpoint: Checkpoint | None = None,
) -> tuple[Certificate, SpreadStats]:
    """certify_model's certificate (the streaming pass's), with the chunks computed by `executor`'s
    workers (module docstring), and how it went.
    checkpoint: as certify_model's (the same state, after every chunk)."""
    tally = Tally()
    run = OnePass(model, inputs, reference, tally, dtypes)
    saved = None if checkpoint is None else checkpoint.last()
    if saved is not None:
        run.restore(saved[1])
    done = -1 if saved is None else saved[0]
    executor.start(Job(model, inputs, reference, dtypes))
    speculation = _Speculation(executor, window=2 * executor.workers + 1, counts_from=done + 1)
    replay = _Replay(run, speculation)
    try:
        with progress_bar(progress, "certify", total, unit="input") as bar:
            for index, (family, tokens) in enumerate(inputs()):
                if index > done:
                    if index == 0:
                        run.chunk(0, family, tokens)  # the climb from p = 1, as _one_pass
                    else:
                        replay.chunk(index, family, tokens)
                    if checkpoint is not None:
                        checkpoint.save(index, run.state())
                bar.update(completed=tally.inputs_checked)
            run.finish()
    finally:
        speculation.close()
        executor.close()
    replay.stats.tasks = executor.tasks
    return tally.freeze(), replay.stats


def check_spread(algorithm: str) -> None:
    """A spread certificate replays the streaming pass: the reference algorithm is refused."""
    if algorithm == "reference":
        raise InputError("a certificate spread over workers needs the streaming pass")
