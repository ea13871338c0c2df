"""headcount's public Python API (issue 30): the functions the package's top level exports. Each is
one call into the library the command line also uses, so Python and the CLI refuse the same input
with the same words (InputError, a ValueError) and compute the same certificates.

    load(path) / save(model, path)      any headcount model file (weight form, table form, min/max,
                                        Boolean), by the format its metadata names
    certify(model, task, n, alphabet)   a Certificate of a weight-form model on induction heads or
                                        the k-hop task
    predict(model, tokens, precision)   a model's outputs on one input in a precision mode
    analyze_heads(model, task, n, …)    each head's scores against the task's mechanisms, and role
    from_hf(model_or_path)              a transformers GPT-2 model or checkpoint as a Transformer

Everything not re-exported by headcount/__init__.py is internal and may move.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from headcount.boolean.model import BooleanModel
from headcount.boolean.model_file import BOOLEAN_FORMAT, load_boolean, save_boolean
from headcount.common.errors import InputError, InternalError
from headcount.common.files import FORMAT, TABLE_FORMAT, read_config
from headcount.core.certify import Counterexample, Rejection
from headcount.core.model import (
    OneLayerTable,
    Transformer,
    VocabMap,
    bind_task,
    load_model,
    save_model,
)
from headcount.induction.certification import InductionCertificate, certify_induction
from headcount.induction.heads import HeadAnalysis
from headcount.induction.heads import analyze_heads as _analyze_heads
from headcount.induction.layouts import bind_layout
from headcount.induction.outputs import Prediction, predict_input, solve, tokens_from_text
from headcount.interop.hf import hf_from_module, import_hf_model
from headcount.minmax.model import MINMAX_FORMAT, MinMaxModel, load_minmax, save_minmax

Model = Transformer | OneLayerTable
AnyModel = Transformer | OneLayerTable | MinMaxModel | BooleanModel
TASKS = ("induction", "khop")


def load(path: str | os.PathLike) -> AnyModel:
    """The model in a headcount model file: a Transformer (weight form) or OneLayerTable (table
    form), a MinMaxModel or a BooleanModel, by the format its metadata names. Reading is bounded
    and runs no code; InputError (ModelFileError) says what is wrong with a file."""
    fmt = read_config(path, formats=(FORMAT, TABLE_FORMAT, MINMAX_FORMAT, BOOLEAN_FORMAT))["format"]
    if fmt == MINMAX_FORMAT:
        return load_minmax(path)
    if fmt == BOOLEAN_FORMAT:
        return load_boolean(path)
    return load_model(path)


def save(model: AnyModel, path: str | os.PathLike) -> None:
    """Write `model` to one safetensors file with its JSON config in the metadata (atomically: the
    file appears whole or not at all). load(path) reads it back exactly."""
    if isinstance(model, MinMaxModel):
        save_minmax(model, path)
    elif isinstance(model, BooleanModel):
        save_boolean(model.layer, model.readout, path, model.info)
    elif isinstance(model, (Transformer, OneLayerTable)):
        save_model(model, path)
    else:
        raise InputError(f"cannot save a {type(model).__name__}: not a headcount model")


@dataclass(frozen=True, repr=False)
class Certificate:
    """What certify proved about a model on a task.

    `certified` is the verdict: every output of the model at `precision_bits` (fixed:p, the
    seed's rounding) on the inputs checked is proven right, and the float64 model makes no error
    there. `scope` says what "the inputs checked" are: "exhaustive" (all of Σ^n) or "sampled"
    (seeded inputs plus every adversarial family; certified on those, not on all of Σ^n).
    `errors` counts the float64 model's wrong outputs; `counterexamples` holds the first of them,
    confirmed by running the model again; `rejected` lists, for each precision below
    `precision_bits`, an input the exact fixed:p model is proven to answer wrongly. `details` is
    the full record (its to_json is the JSON object the command line prints).
    """

    task: str
    n: int
    alphabet: int
    hops: int
    certified: bool
    precision_bits: int | None
    proven: bool
    errors: int
    scope: str
    inputs_checked: int
    counterexamples: tuple[Counterexample, ...]
    rejected: tuple[Rejection, ...]
    size: int | None
    details: InductionCertificate

    def to_json(self) -> dict[str, Any]:
        """The JSON object the command line's induction certify prints for the same request."""
        return self.details.to_json()

    def __repr__(self) -> str:
        where = f"task={self.task!r}, n={self.n}, alphabet={self.alphabet}"
        if self.hops != 1:
            where += f", hops={self.hops}"
        return (
            f"Certificate(certified={self.certified}, {where}, scope={self.scope!r}, "
            f"precision_bits={self.precision_bits}, errors={self.errors}, "
            f"inputs_checked={self.inputs_checked})"
        )


def _confirmed(
    model: Model, found: Counterexample | None, n: int, alphabet: int, hops: int, layout: str
) -> tuple[Counterexample, ...]:
    """The float64 counterexample, run once more on the model and against the reference: a
    counterexample that does not reproduce is a bug in headcount (InternalError), never a
    verdict. Inputs of a layout with a prefix token are kept as reported."""
    if found is None or layout != "plain":
        return () if found is None else (found,)
    tokens = np.asarray(found.input, dtype=np.int64)
    bound = bind_layout(model, layout, n, alphabet, hops)
    got = predict_input(tokens, bound, "float64").outputs_text[found.position - 1]
    expected = solve(tokens, hops).outputs_text[found.position - 1]
    if (got, expected) != (found.model_output, found.expected):
        raise InternalError(f"a counterexample did not reproduce: {found.to_json()}")
    return (found,)


def certify(
    model: Model,
    task: str = "induction",
    *,
    n: int,
    alphabet: int,
    hops: int = 1,
    samples: int | None = None,
    seed: int = 0,
    layout: str = "plain",
    executor: str = "local",
    workers: int | None = None,
    address: str | None = None,
) -> Certificate:
    """Certify `model` on `task` at length n over tokens 0..alphabet−1.

    task: "induction" (one hop) or "khop" (`hops` hops; "induction" is "khop" with hops=1).
    Inputs: all of Σ^n when alphabet^n ≤ 2·10⁶ (scope "exhaustive"), otherwise `samples` inputs
    drawn with `seed` plus every adversarial family (scope "sampled"). layout: "plain", or
    "hop-prefix" (the hop-count token first, as the k-hop paper's models read it). The model is
    evaluated in exact fixed:p arithmetic: the smallest p with no error is searched for and every
    output at that p is proven by rigorous interval bounds or the exact evaluator. executor:
    "local" (this process) or "ray" — the inputs' chunks computed on a Ray cluster (a local one
    of `workers` CPUs, or the one at `address`; the extra headcount[ray]) and merged into the
    certificate this process would give. InputError for a request out of range or beyond the
    memory and work bounds."""
    if task not in TASKS:
        raise InputError(f"task {str(task)[:40]!r} is not one of {', '.join(TASKS)}")
    if task == "induction" and hops != 1:
        raise InputError(f"task 'induction' has one hop; for hops={hops} use task='khop'")
    if not isinstance(model, (Transformer, OneLayerTable)):
        raise InputError(
            f"certify takes a Transformer or OneLayerTable, got {type(model).__name__} "
            "(min/max and Boolean models: headcount.minmax, headcount.boolean)"
        )
    details = certify_induction(
        model, n, alphabet, samples=samples, seed=seed, hops=hops, layout=layout,
        executor=executor, workers=workers, address=address,
    )  # fmt: skip
    c = details.certificate
    return Certificate(
        task=task,
        n=n,
        alphabet=alphabet,
        hops=hops,
        certified=c.certified,
        precision_bits=c.precision_bits,
        proven=c.proven_at_precision_bits,
        errors=c.errors,
        scope=details.scope,
        inputs_checked=c.inputs_checked,
        counterexamples=_confirmed(model, c.first_counterexample, n, alphabet, hops, layout),
        rejected=c.rejected,
        size=details.size,
        details=details,
    )


def predict(
    model: Model,
    tokens: Sequence[int] | np.ndarray | str,
    precision: str = "fixed:12",
    *,
    alphabet: int | None = None,
) -> Prediction:
    """The model's output at every position of one input (tokens 0..alphabet−1, or a string such
    as "3 0 2 3 0"), evaluated in `precision`: "fixed:p" (the seed's rounding at p bits, computed
    exactly), "float16", "bfloat16", "float32", "float64", or "exact" (real arithmetic in float64,
    checked, not proven). Prediction.outputs holds the tokens, with BOTTOM (−1) for ⊥;
    outputs_text prints them. A model over its own vocabulary (from_hf, or a vocabulary-map
    readout) reads and answers its own token ids; with `alphabet` (the task's S) it is read
    through its vocabulary map, as certify reads it: the input holds the task's tokens
    0..alphabet−1, and the outputs are the task's tokens, ⊥, or OTHER for an id the task does
    not use."""
    array = tokens_from_text(tokens) if isinstance(tokens, str) else np.asarray(tokens)
    if array.ndim != 1 or array.size == 0 or not np.issubdtype(array.dtype, np.integer):
        raise InputError("tokens must be a non-empty 1-D sequence of integers")
    if array.min() < 0:
        raise InputError(f"tokens must be ≥ 0, got {int(array.min())}")
    if alphabet is not None and isinstance(model, Transformer):
        model = bind_task(model, alphabet)
    return predict_input(array.astype(np.int64), model, precision)


def analyze_heads(
    model: Model,
    task: str = "induction",
    *,
    n: int = 16,
    alphabet: int = 4,
    samples: int = 256,
    seed: int = 0,
    hops: int = 1,
    layout: str | None = None,
) -> HeadAnalysis:
    """Every head's scores against the task's mechanisms (previous-token, induction, hop
    pointers, …) and the role they name, measured on `samples` seeded inputs of length n."""
    return _analyze_heads(model, task, layout, n, alphabet, samples, seed, hops)


def from_hf(
    model_or_path: Any,
    *,
    readout: str | None = None,
    vocab_map: dict[str, Any] | None = None,
    config: str | os.PathLike | None = None,
    n_ctx: int | None = None,
) -> Transformer:
    """A Hugging Face model as a Transformer: a live `transformers` model or a checkpoint (a
    save_pretrained folder or a state-dict file, read bounded and without running code) of GPT-2,
    GPT-NeoX (Pythia), Llama, Mistral, Qwen2 or Gemma (docs/families.md: every part and what is
    proven about it; another model_type is an InputError naming it). readout: "lm-head", "tied"
    or "hidden" (default: lm-head when the model has its own readout, else tied); vocab_map: which
    model ids are the task's symbols and ⊥ ({"symbols": […], "none": id}; default token s ↦ s, ⊥
    ↦ S); n_ctx: the positions of a rotary model (default: its max_position_embeddings, at most
    4096)."""
    mapping = VocabMap.from_json(vocab_map)
    if isinstance(model_or_path, (str, os.PathLike)):
        return import_hf_model(
            model_or_path, config=config, readout=readout, vocab_map=mapping, n_ctx=n_ctx
        )
    return hf_from_module(model_or_path, readout=readout, vocab_map=mapping, n_ctx=n_ctx)
