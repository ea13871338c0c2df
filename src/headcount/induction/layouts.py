"""Task layouts — how a model reads the k-hop / induction task — and `headcount evaluate`: a model's
error per hop count on inputs laid out the way it was trained (issue 14, point 5).

Layouts:

* ``plain``: the characters σ ∈ Σ^n only; the label at position i is hop_k(σ)_i, ⊥ where it does not
  exist; one fixed k.
* ``hop-prefix`` (the k-hop paper's public code): position 0 holds the hop-count token — task token
  S + k − 1 for k ≥ 1 and S + K for hop count 0 (K the highest hop count bound), core.model.vocab's
  layout, which an imported model's vocabulary map turns into its own id — and positions 1..n the
  characters; the label at position i ≥ 1 is hop_k of the characters at
  index i − 1 (computed on the characters only), ⊥ where it does not exist; position 0 is not scored
  (its label is core.certify.certify's IGNORE). Positions that results report (counterexamples,
  rejections) count the hop token: 1-based over the whole input, as certify prints them.

Tasks: ``khop`` draws the characters with no two adjacent equal (task.no_adjacent_repeats: the k-hop
paper's inputs and the learning lab's khop runs) and takes hop counts 0..MAX_HOPS (hop_0(σ)_i = σ_i,
the k-hop paper's hop-0 task; its token exists only in a vocabulary map that names it);
``induction`` is k = 1 with uniform characters (task.uniform: the lab's induction runs), in the
plain layout unless layout "hop-prefix" asks for the hop token of k = 1 first (the characters stay
uniform: the task, not the layout, chooses them).

Reproducing a training run: σ is drawn once — `samples` rows from np.random.default_rng([seed, n,
alphabet]) — and shared by every k, as learn.evaluate.evaluate_induction draws its held-out set;
with the defaults (seed EVAL_SEED, samples EVAL_SAMPLES) `headcount evaluate` on a model a
`headcount train induction` run wrote reports the run's accuracy_by_hop (and accuracy,
accuracy_bottom) as error = 1 − accuracy.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from headcount.common.errors import InputError, param
from headcount.common.resources import check_memory, check_work
from headcount.common.validate import check_choice, check_int
from headcount.core.certify import (
    IGNORE,
    WORKERS,
    InputStream,
    Model,
    Reference,
    WorkBudget,
    certified_predict,
    chunk_rows,
    emulate,
    fixed_predict,
    logit_bytes,
    output_classes,
)
from headcount.core.model import BOTTOM, bind_task, load_model
from headcount.core.numbers import Precision, parse_precision
from headcount.induction import task
from headcount.induction.construction import evaluation_bytes

LAYOUTS = ("plain", "hop-prefix")
TASKS = ("khop", "induction")
GENERATORS = {"khop": "no_adjacent_repeats", "induction": "uniform"}
DEFAULT_LAYOUT = {"khop": "hop-prefix", "induction": "plain"}
# Hop counts 0..16: the range of the k-hop paper's experiments (its training draws k from 0..16;
# hop count 0 is issue 35's, 1..16 issue 14's).
# Each k of the hop-prefix layout needs its own hop token in the model's vocabulary, and evaluate
# runs one pass per k.
MAX_HOPS = 16
# The learning lab's held-out sets (learn.evaluate.EVAL_SEED and EVAL_SIZE), duplicated because
# induction never imports learn; tests/induction/test_layouts.py keeps them equal.
EVAL_SEED = 20_240_601
EVAL_SAMPLES = 2048
# evaluate: at most this many multiply-adds in all (inputs × hop counts × model_work). Why: the
# float passes ran 1–4·10¹⁰ multiply-adds a second on this machine's CPUs (random GPT-2-style
# models, d_model 64–256), so the limit is a few minutes; a GPT-2-small-sized model (12 layers,
# d_model 768, vocabulary 50,257) costs about 8·10⁹ per input at n = 64, so a few hundred inputs per
# hop count.
EVALUATE_MAX_WORK = 2.0**41
# fixed:p runs the rigorous bounds (a midpoint and a radius pass, with absolute values of the
# weights) before any exact evaluation: counted as this many float passes.
FIXED_WORK_FACTOR = 4
# Bytes per input position while evaluating: σ, the laid-out tokens, targets, predictions and the
# masks that score them (int64 and bool arrays, a few alive at once), and induction_targets' work
# arrays.
BYTES_PER_POSITION = 96
_HOPS_TEXT = re.compile(r"\s*([0-9]{1,6})\s*(?:\.\.\s*([0-9]{1,6})\s*)?")


def parse_hops(text: str) -> tuple[int, ...]:
    """The `hops` text "K" or a range "a..b" as the hop counts it names, each 0..MAX_HOPS
    (InputError otherwise)."""
    match = _HOPS_TEXT.fullmatch(str(text))
    hops_ = param("hops")
    allowed = (
        f"give K or a range a..b with 0 ≤ a ≤ b ≤ {MAX_HOPS}, e.g. {hops_} 3 or {hops_} "
        f"0..{MAX_HOPS}"
    )
    if match is None:
        raise InputError(f"{hops_} {str(text)[:40]!r} is not a hop count: {allowed}")
    low = int(match.group(1))
    high = low if match.group(2) is None else int(match.group(2))
    if not 0 <= low <= high <= MAX_HOPS:
        raise InputError(f"{hops_} {str(text).strip()[:40]} is out of range: {allowed}")
    return tuple(range(low, high + 1))


def check_hops(hops: int, lowest: int = 1) -> int:
    """One hop count k, lowest ≤ k ≤ MAX_HOPS (InputError otherwise); evaluate takes hop count 0,
    the constructions and certificates k ≥ 1."""
    return check_int("hops", hops, lowest, MAX_HOPS)


def check_layout(layout: str) -> str:
    return check_choice("layout", layout, LAYOUTS)


def prefix_length(layout: str) -> int:
    """Tokens before the characters: 1 (the hop token) for hop-prefix, 0 for plain."""
    return int(check_layout(layout) == "hop-prefix")


def task_characters(task_name: str, samples: int, n: int, alphabet: int, seed: int) -> np.ndarray:
    """The characters σ [samples n] the task draws (GENERATORS) from np.random.default_rng([seed, n,
    alphabet]) — learn.evaluate.heldout_rng's seeding, so the defaults give the lab's held-out
    set."""
    rng = np.random.default_rng([seed, n, alphabet])
    return task.GENERATORS[GENERATORS[task_name]](rng, samples, n, alphabet)


def hop_token(alphabet: int, hops, bound: int = 0):
    """The task token of hop count k (an int, or an array of them): S + k − 1 for k ≥ 1
    (core.model.vocab's layout; the learning lab's hop token), S + `bound` for hop count 0 (after
    the hop counts 1..bound a model is bound to: core.model.vocab.bind_task; a lab model trained on
    1..K has it at S + K)."""
    k = np.asarray(hops)
    token = alphabet + np.where(k == 0, bound, k - 1)
    return int(token) if token.ndim == 0 else token


def lay_out(sigma: np.ndarray, layout: str, alphabet: int, hops: int, bound: int = 0) -> np.ndarray:
    """The model's input [batch n(+1)] for characters σ [batch n]: σ itself, or the hop token first
    (hop_token with `bound`)."""
    if not prefix_length(layout):
        return sigma
    first = np.full((len(sigma), 1), hop_token(alphabet, hops, bound), dtype=np.int64)
    return np.concatenate([first, sigma], axis=1)


def layout_targets(sigma: np.ndarray, layout: str, hops: int) -> np.ndarray:
    """Labels [batch n(+1)] of the laid-out input: hop_k(σ) (BOTTOM where none), IGNORE at the hop
    token."""
    target = task.induction_targets(sigma, hops)
    if not prefix_length(layout):
        return target
    return np.concatenate([np.full((len(sigma), 1), IGNORE, dtype=np.int64), target], axis=1)


def layout_reference(layout: str, hops: int) -> Reference:
    """core.certify.certify's reference on laid-out inputs: the labels of their characters (module
    docstring)."""
    skip = prefix_length(layout)
    return lambda tokens: layout_targets(tokens[:, skip:], layout, hops)


def layout_stream(stream: InputStream, layout: str, alphabet: int, hops: int) -> InputStream:
    """A replayable stream of (family, characters) chunks as (family, laid-out input) chunks."""

    def laid_out() -> Iterator[tuple[str, np.ndarray]]:
        for family, sigma in stream():
            yield family, lay_out(sigma, layout, alphabet, hops)

    return laid_out


def bind_layout(
    model: Model, layout: str, n: int, alphabet: int, hops: int, zero: bool = False
) -> Model:
    """`model` bound to the task's tokens (core.model.vocab.bind_task: symbols 0..S−1 and, for
    hop-prefix, hop tokens S..S+k−1, and hop count 0's at S + k with `zero`), after checking its
    context holds the laid-out input (n + 1 tokens for hop-prefix)."""
    length = n + prefix_length(layout)
    if length > model.n_ctx:
        what = f"n + 1 = {length} (the hop token and n characters)" if length > n else f"n = {n}"
        raise InputError(
            f"the model's context holds {model.n_ctx} tokens; {param('n')} {n} with "
            f"{param('layout')} "
            f"{layout} needs {what}"
        )
    return bind_task(model, alphabet, hops if length > n else 0, zero and length > n)


# ---------------------------------------------------------------------------------------------
# Bounds: the work and memory of evaluating a model, from its shape
# ---------------------------------------------------------------------------------------------


def model_work(model: Model, length: int) -> float:
    """Multiply-adds of one input of `length` tokens: every weight once per position (q, k, v, o,
    MLP, readout) plus, per head, d_head + d_value per (query, key) pair (a float, so any size is
    safe)."""
    length = float(length)
    per_position = float(model.d_model) * output_classes(model)
    per_pair = 0.0
    for layer in getattr(model, "layers", ()):
        if isinstance(layer, str):  # a one-layer table: its tables are read, not multiplied
            per_pair += float(model.heads_per_layer[0]) * (model.Q.shape[-1] + model.d_model)
            continue
        for head in layer.heads:
            per_position += sum(float(W.size) for W in (head.W_Q, head.W_K, head.W_V, head.W_O))
            per_pair += float(head.W_Q.shape[1] + head.W_V.shape[1])
        if layer.mlp is not None:
            per_position += float(layer.mlp.W_in.size + layer.mlp.W_out.size)
    return length * per_position + length * length * per_pair


def evaluation_memory(model: Model, length: int, inputs: int) -> float:
    """Bytes of evaluating `inputs` inputs of `length` tokens: core's chunked pass
    (evaluation_bytes), each worker's chunk of output logits (an imported model's vocabulary can
    dominate) and the input arrays."""
    logits = WORKERS * logit_bytes(model, chunk_rows(model, length), length)
    return (
        evaluation_bytes(length, model.d_model)
        + logits
        + BYTES_PER_POSITION * float(inputs) * length
    )


# ---------------------------------------------------------------------------------------------
# evaluate: per-hop error
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HopError:
    """The model at one hop count: `error` = errors / positions over positions whose answer exists
    (as 1 − accuracy: the float a training run's accuracy gives), `error_none` the same over ⊥
    positions (0.0 where there are none, as a training run's accuracy 1.0); `undecided`: fixed:p
    positions neither the bounds nor the exact evaluator decided (their bounds' midpoint guess is
    scored; 0 in the float modes)."""

    hops: int
    errors: int
    positions: int
    errors_none: int
    positions_none: int
    undecided: int = 0

    @property
    def error(self) -> float:
        return _error(self.errors, self.positions)

    @property
    def error_none(self) -> float:
        return _error(self.errors_none, self.positions_none)

    def to_json(self) -> dict[str, Any]:
        return {
            "hops": self.hops,
            "error": self.error,
            "positions": self.positions,
            "error_none": self.error_none,
            "positions_none": self.positions_none,
            "errors": self.errors,
            "errors_none": self.errors_none,
            "undecided": self.undecided,
        }


def _error(errors: int, positions: int) -> float:
    """1 − accuracy, computed as the learning lab computes accuracy (bit for bit the same float);
    0.0 without positions."""
    return 0.0 if positions == 0 else 1.0 - (positions - errors) / positions


def model_facts(model: Model) -> dict[str, Any]:
    """The shape of a model as a file holds it (before binding): facts, never its own labels."""
    decoder = model.decoder
    facts = {
        "layers": len(model.layers),
        "heads": list(model.heads_per_layer),
        "d_model": model.d_model,
        "n_ctx": model.n_ctx,
        "vocab": model.alphabet,
        "decoder": getattr(decoder, "kind", type(decoder).__name__),
        "extensions": list(getattr(model, "extensions", [])),
    }
    if getattr(decoder, "readout", None) is not None:
        facts["readout"] = decoder.readout
    return facts


@dataclass(frozen=True)
class Evaluation:
    """What `headcount evaluate` prints: the request, the model's shape and one HopError per hop
    count."""

    task: str
    layout: str
    n: int
    alphabet: int
    samples: int
    seed: int
    precision: str
    model: dict[str, Any]
    per_hop: tuple[HopError, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "layout": self.layout,
            "n": self.n,
            "alphabet": self.alphabet,
            "samples": self.samples,
            "seed": self.seed,
            "precision": self.precision,
            "model": dict(self.model),
            "per_hop": [h.to_json() for h in self.per_hop],
        }

    def to_markdown(self) -> str:
        """A title line and a Markdown table, one row per hop count."""
        lines = [
            f"{self.task}, {self.layout} layout: n={self.n}, alphabet={self.alphabet}, "
            f"{self.samples} samples (seed {self.seed}), {self.precision}",
            "",
            "| hops | error | positions | error (⊥) | positions (⊥) |",
            "|---:|---:|---:|---:|---:|",
        ]
        lines += [
            f"| {h.hops} | {h.error:.4f} | {h.positions} | {h.error_none:.4f} | "
            f"{h.positions_none} |"
            for h in self.per_hop
        ]
        if any(h.undecided for h in self.per_hop):
            lines += ["", f"undecided fixed:p positions: {sum(h.undecided for h in self.per_hop)}"]
        return "\n".join(lines)


def _outputs(
    model: Model, tokens: np.ndarray, prec: Precision, skip: int
) -> tuple[np.ndarray, np.ndarray]:
    """(outputs, decided) [batch length] in mode `prec`: core.certify.evaluate.predict's semantics
    (fixed:p exactly, without a work limit), with the `skip` unscored first positions never sent to
    the exact evaluator."""
    with np.errstate(all="ignore"):  # float16 overflow is that mode's behaviour, not a failure
        if prec.kind != "fixed":
            return emulate(model, tokens, prec), np.ones(tokens.shape, dtype=bool)
        out, proven = certified_predict(model, tokens, prec)
        proven[:, :skip] = True
        return fixed_predict(
            model, tokens, prec.bits, budget=WorkBudget(None), proven_in=(out, proven)
        )


def hop_error(
    model: Model,
    sigma: np.ndarray,
    layout: str,
    alphabet: int,
    hops: int,
    prec: Precision,
    bound: int = 0,
) -> HopError:
    """The (bound: hop counts 1..`bound`, and 0 after them) model's HopError on characters σ at hop
    count `hops`."""
    skip = prefix_length(layout)
    target = task.induction_targets(sigma, hops)
    got, decided = _outputs(model, lay_out(sigma, layout, alphabet, hops, bound), prec, skip)
    got, decided = got[:, skip:], decided[:, skip:]
    wrong, none = got != target, target == BOTTOM
    return HopError(
        hops,
        errors=int((wrong & ~none).sum()),
        positions=int((~none).sum()),
        errors_none=int((wrong & none).sum()),
        positions_none=int(none.sum()),
        undecided=int((~decided).sum()),
    )


def _check_request(
    task_name: str, layout: str | None, hops: tuple[int, ...], n: int, alphabet: int
) -> str:
    """The layout (the task's default when None), after checking the request's own values."""
    check_choice("task", task_name, TASKS)
    layout = check_layout(DEFAULT_LAYOUT[task_name] if layout is None else layout)
    if not hops:
        raise InputError(f"give at least one hop count ({param('hops')} K or a..b)")
    if task_name == "induction" and tuple(hops) != (1,):
        task_ = param("task")
        raise InputError(
            f"{task_} induction is hop count 1: use {task_} khop for other {param('hops')}"
        )
    for k in hops:
        check_hops(k, lowest=0)
    check_int("n", n, 1)
    check_int("alphabet", alphabet, 2)
    return layout


def evaluate_model(
    model: Model,
    task_name: str,
    n: int,
    alphabet: int,
    hops: tuple[int, ...] = (1,),
    layout: str | None = None,
    samples: int = EVAL_SAMPLES,
    seed: int = EVAL_SEED,
    precision: str = "float64",
) -> Evaluation:
    """Per-hop error of `model` (as a file holds it: bound here) on `samples` inputs (module
    docstring); every size is checked and the work and memory bounded before anything runs."""
    layout = _check_request(task_name, layout, hops, n, alphabet)
    check_int("samples", samples, 1)
    check_int("seed", seed, 0)
    prec = parse_precision(precision)
    top = max(hops) if prefix_length(layout) else 0
    bound = bind_layout(model, layout, n, alphabet, top, zero=0 in hops)
    length = n + prefix_length(layout)
    n_, samples_, hops_ = param("n"), param("samples"), param("hops")
    what = f"evaluate at {n_} {n} {samples_} {samples} {hops_} {hops[0]}..{hops[-1]}"
    factor = FIXED_WORK_FACTOR if prec.kind == "fixed" else 1
    check_work(
        float(samples) * len(hops) * factor * model_work(bound, length),
        EVALUATE_MAX_WORK,
        what,
        "multiply-adds (inputs × hop counts × the model's work per input)",
        f"{samples_}, {hops_} or {n_}",
    )
    check_memory(evaluation_memory(bound, length, samples), what)
    sigma = task_characters(task_name, samples, n, alphabet, seed)
    per_hop = tuple(hop_error(bound, sigma, layout, alphabet, k, prec, top) for k in hops)
    return Evaluation(
        task_name, layout, n, alphabet, samples, seed, prec.name, model_facts(model), per_hop
    )


def evaluate_file(
    model_file: str | os.PathLike,
    task_name: str,
    n: int,
    alphabet: int,
    hops: str = "1",
    layout: str | None = None,
    samples: int = EVAL_SAMPLES,
    seed: int = EVAL_SEED,
    precision: str = "float64",
) -> Evaluation:
    """evaluate_model of a model file, with `hops` as text ("K" or "a..b"); the request is checked
    before the file is read."""
    hop_counts = parse_hops(hops)
    _check_request(task_name, layout, hop_counts, n, alphabet)
    check_int("samples", samples, 1)
    check_int("seed", seed, 0)
    parse_precision(precision)
    return evaluate_model(
        load_model(model_file), task_name, n, alphabet, hop_counts, layout, samples, seed, precision
    )
