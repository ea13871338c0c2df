"""Token-level attention models for min/max (spec/minmax.md, "Model").

No positions: a head is a score s_ω and a value v_ω per token ω ∈ [M], and its output on a list x is
Att(x) = Σ_ω h_ω α_ω v_ω / Σ_ω h_ω α_ω with α_ω = exp(s_ω), which depends on x only through its
histogram h. A layer outputs the sum of its heads. A classifier θ [M d] answers argmax_i ⟨θ_i, z⟩
(as a 1-based token) or BOTTOM when the maximum is tied — a tie counts as a wrong answer.

Everything is float64. Files: one safetensors file, format "headcount-minmax", tensors
``heads.{k}.scores [M]``, ``heads.{k}.values [M d]``, ``classifier_min.theta``,
``classifier_max.theta``, the JSON config (format, version, M, d, heads, info) in the metadata key
"headcount" (core/model/files.py's convention, written atomically with its helpers). ``ModelSource``
is where a single-head command's model comes from: such a file, or a seeded random head.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from headcount.common.errors import InputError, param
from headcount.common.files import (
    MAX_HEADS_PER_LAYER,
    ModelFileError,
    TensorShapes,
    atomic_write_safetensors,
    check_version,
    config_info,
    config_int,
    load_tensors,
    read_config,
    show_path,
)
from headcount.common.resources import check_memory
from headcount.core.model import BOTTOM
from headcount.minmax.task import check_tokens

MINMAX_FORMAT = "headcount-minmax"
MINMAX_VERSION = 1


def _finite(name: str, a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a, dtype=np.float64)
    if not np.all(np.isfinite(a)):
        raise InputError(f"{name} must be finite")
    return a


@dataclass(frozen=True)
class TokenHead:
    """One position-free head: scores [M] (α_ω = exp(s_ω)), values [M d]."""

    scores: np.ndarray  # [M]
    values: np.ndarray  # [M d]

    def __post_init__(self):
        s, v = _finite("scores", self.scores), _finite("values", self.values)
        if s.ndim != 1 or v.ndim != 2 or v.shape[0] != s.shape[0] or s.shape[0] < 2:
            raise InputError(
                f"a head needs scores [M] and values [M d] with M ≥ 2, got {s.shape} and {v.shape}"
            )
        object.__setattr__(self, "scores", s)
        object.__setattr__(self, "values", v)

    @property
    def M(self) -> int:
        return self.scores.shape[0]

    @property
    def dim(self) -> int:
        return self.values.shape[1]


@dataclass(frozen=True)
class TokenLayer:
    """A layer of heads with a common M and d; its output is the sum of the head outputs."""

    heads: tuple[TokenHead, ...]

    def __post_init__(self):
        heads = tuple(self.heads)
        if not heads or len({(h.M, h.dim) for h in heads}) != 1:
            raise InputError("a layer needs at least one head, all with the same M and d")
        object.__setattr__(self, "heads", heads)

    @property
    def M(self) -> int:
        return self.heads[0].M

    @property
    def n_heads(self) -> int:
        return len(self.heads)

    @property
    def dim(self) -> int:
        return self.heads[0].dim


@dataclass(frozen=True)
class Classifier:
    """Linear M-class classifier: argmax_i ⟨θ_i, z⟩ (1-based), BOTTOM on an exact tie. theta [M
    d]."""

    theta: np.ndarray  # [M d]

    def __post_init__(self):
        t = _finite("theta", self.theta)
        if t.ndim != 2 or t.shape[0] < 2:
            raise InputError(f"a classifier needs theta [M d] with M ≥ 2, got shape {t.shape}")
        object.__setattr__(self, "theta", t)

    @property
    def M(self) -> int:
        return self.theta.shape[0]

    def logits(self, z: np.ndarray) -> np.ndarray:
        """⟨θ_i, z⟩ for every class: [batch M]."""
        return np.asarray(z, dtype=np.float64) @ self.theta.T

    def decide(self, z: np.ndarray) -> np.ndarray:
        """Decisions [batch]: the 1-based argmax of the float64 logits, BOTTOM where the top value
        is tied.

        This is the float64 decision; verify.decide_exact gives the exact one for near-ties."""
        logits = self.logits(z)
        top = logits.max(axis=1)
        tied = (logits == top[:, None]).sum(axis=1) > 1
        return np.where(tied, BOTTOM, logits.argmax(axis=1) + 1)


@dataclass(frozen=True)
class MinMaxModel:
    """One layer whose output feeds two classifiers: f_min and f_max."""

    layer: TokenLayer
    classifier_min: Classifier
    classifier_max: Classifier
    info: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        for c in (self.classifier_min, self.classifier_max):
            if c.theta.shape != (self.layer.M, self.layer.dim):
                raise InputError(
                    f"classifier theta has shape {c.theta.shape}, "
                    f"expected [M d] = {(self.layer.M, self.layer.dim)}"
                )


def as_layer(model: MinMaxModel | TokenLayer | TokenHead) -> TokenLayer:
    if isinstance(model, MinMaxModel):
        return model.layer
    if isinstance(model, TokenHead):
        return TokenLayer((model,))
    if isinstance(model, TokenLayer):
        return model
    raise TypeError(f"expected a MinMaxModel, TokenLayer or TokenHead, got {type(model).__name__}")


def head_forward(head: TokenHead, x: np.ndarray) -> np.ndarray:
    """Att(x) for a batch of lists x [batch n] (tokens 1..M): [batch d].

    Stable softmax: each list's scores are shifted by that list's maximum score, so the largest
    weight is exp(0) = 1 and nothing overflows (scores of size thousands occur in the
    constructions)."""
    x = check_tokens(x, head.M)
    s = head.scores[x - 1]  # [batch n]
    w = np.exp(s - s.max(axis=1, keepdims=True))  # [batch n]
    num = np.einsum("bn,bnd->bd", w, head.values[x - 1])  # [batch d]
    return num / w.sum(axis=1, keepdims=True)


def forward(
    model: MinMaxModel | TokenLayer | TokenHead, x: np.ndarray, chunk: int = 4096
) -> np.ndarray:
    """The layer output z (sum of the heads' outputs) for lists x [batch n]: [batch d], float64."""
    layer = as_layer(model)
    x = check_tokens(x, layer.M)
    out = np.empty((x.shape[0], layer.dim))
    for start in range(0, x.shape[0], chunk):
        xb = x[start : start + chunk]
        out[start : start + chunk] = sum(head_forward(h, xb) for h in layer.heads)
    return out


def predict(model: MinMaxModel, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Float64 decisions (f_min, f_max) [batch] each, 1-based tokens or BOTTOM."""
    z = forward(model, x)
    return model.classifier_min.decide(z), model.classifier_max.decide(z)


def save_minmax(model: MinMaxModel, path: str | os.PathLike) -> None:
    """Write a MinMaxModel to one safetensors file (atomic; float64 tensors, JSON config in
    metadata)."""
    tensors: dict[str, np.ndarray] = {}
    for k, h in enumerate(model.layer.heads):
        tensors[f"heads.{k}.scores"] = h.scores
        tensors[f"heads.{k}.values"] = h.values
    tensors["classifier_min.theta"] = model.classifier_min.theta
    tensors["classifier_max.theta"] = model.classifier_max.theta
    tensors = {k: np.ascontiguousarray(v, dtype=np.float64) for k, v in tensors.items()}
    config = {
        "format": MINMAX_FORMAT,
        "version": MINMAX_VERSION,
        "M": model.layer.M,
        "dim": model.layer.dim,
        "heads": model.layer.n_heads,
        "info": model.info,
    }
    meta = {"headcount": json.dumps(config)}
    atomic_write_safetensors(path, tensors, meta)


def load_minmax(path: str | os.PathLike) -> MinMaxModel:
    """Read a file written by save_minmax; ModelFileError (a ValueError) if it is not a valid one:
    the version, the counts (heads ≤ MAX_HEADS_PER_LAYER, checked against the tensor list) and every
    tensor's shape ([M] scores, [M d] values and θ) are checked from the header before a tensor is
    loaded."""
    config = read_config(path, formats=(MINMAX_FORMAT,))
    path = os.fsdecode(path)
    check_version(config, path, MINMAX_FORMAT, (MINMAX_VERSION,))
    what = MINMAX_FORMAT
    heads = config_int(config, "heads", path, what, 1, MAX_HEADS_PER_LAYER)
    M, dim = (
        config_int(config, "M", path, what, 2, 2**62),
        config_int(config, "dim", path, what, 1, 2**62),
    )
    info = config_info(config, path, what)
    shapes = TensorShapes(path, what)
    if 2 * heads + 2 != len(shapes.listed):  # counts against the tensor list first
        raise shapes.error(
            f"its config describes {2 * heads + 2} tensors, the file holds {len(shapes.listed)}"
        )
    names = ["classifier_min.theta", "classifier_max.theta"]
    for name in names:
        shapes.expect(name, (M, dim), "[M d]")
    for k in range(heads):
        shapes.expect(f"heads.{k}.scores", (M,), "[M]")
        shapes.expect(f"heads.{k}.values", (M, dim), "[M d]")
        names += [f"heads.{k}.scores", f"heads.{k}.values"]
    shapes.only(names)
    tensors = load_tensors(shapes)  # finite, float64
    try:
        layer = TokenLayer(
            tuple(
                TokenHead(tensors[f"heads.{k}.scores"], tensors[f"heads.{k}.values"])
                for k in range(heads)
            )
        )
        return MinMaxModel(
            layer, Classifier(tensors[names[0]]), Classifier(tensors[names[1]]), info
        )
    except (KeyError, TypeError, ValueError) as err:
        raise ModelFileError(
            f"{show_path(path)} is not a valid headcount-minmax model: {type(err).__name__}: {err}"
        ) from None


def random_single_head(
    rng: np.random.Generator, M: int, dim: int, scale: float = 1.0
) -> MinMaxModel:
    """A seeded random one-head model with two random classifiers (Gaussian scores, values, θ ×
    scale): a generic model for the verifiers and the one-head lower-bound tools to work on."""
    if M < 2 or dim < 1:
        raise InputError(f"a random head needs M ≥ 2 and dim ≥ 1, got M={M}, dim={dim}")
    head = TokenHead(scale * rng.standard_normal(M), scale * rng.standard_normal((M, dim)))
    info = {"construction": "random_single_head", "M": M, "dim": dim, "scale": float(scale)}
    return MinMaxModel(
        TokenLayer((head,)),
        Classifier(rng.standard_normal((M, dim))),
        Classifier(rng.standard_normal((M, dim))),
        info,
    )


@dataclass(frozen=True)
class ModelSource:
    """Where a single-head command's model comes from: a model file (``path``), or a seeded random
    head (``random_seed`` with value dimension ``dim``). Checked when loaded, after the command's
    own sizes."""

    path: str | os.PathLike | None = None
    random_seed: int | None = None
    dim: int | None = None

    def load(self, M: int) -> MinMaxModel:
        """The model (InputError for a bad choice of source or an unreadable file)."""
        if (self.path is None) == (self.random_seed is None):
            raise InputError(
                f"give exactly one of {param('model')} FILE or {param('random_seed')} R "
                f"(with {param('dim')} d)"
            )
        if self.path is not None:
            if self.dim is not None:  # it shapes the random head only: a contradiction
                raise InputError(
                    f"{param('dim')} describes the random head: give it with "
                    f"{param('random_seed')}, "
                    f"not {param('model')}"
                )
            return load_minmax(self.path)  # a bad file: ModelFileError, an InputError
        if self.dim is None or self.dim < 1:
            raise InputError(f"{param('random_seed')} needs {param('dim')} d ≥ 1")
        if (
            isinstance(self.random_seed, bool)
            or not isinstance(self.random_seed, int)
            or self.random_seed < 0
        ):
            raise InputError(
                f"{param('random_seed')} must be an integer ≥ 0, got {self.random_seed!r}"
            )
        # scores, values and two classifiers [M dim], each drawn and then scaled (two copies at
        # once)
        what = f"a random head at {param('M')} {M} {param('dim')} {self.dim}"
        check_memory(2 * 8.0 * M * (3 * self.dim + 1), what)
        return random_single_head(np.random.default_rng(self.random_seed), M, self.dim)
