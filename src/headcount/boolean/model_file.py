"""The file format of an exact Boolean model: ``save_boolean`` / ``load_boolean``.

One safetensors file, no pickle: the JSON config under the metadata key "headcount" holds every
weight, value and coefficient as an exact rational string ("p/q"); the tensors are float64
roundings for inspection only. Loading is bounded (issue 13): the JSON's size, the counts
(MAX_FILE_*), each rational's digits (model.MAX_RATIONAL_DIGITS) and every tensor's shape are
checked before any exact number is built; a file that is not a valid model is a ModelFileError.
The model kind itself (BooleanModel, its layer and readout) is model.py's.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from itertools import chain
from typing import Any

import numpy as np
from flint import fmpq

from headcount.boolean.model import (
    BooleanHead,
    BooleanLayer,
    BooleanModel,
    Readout,
    check_dims,
    fmpq_to_float,
    to_fmpq,
)
from headcount.boolean.task import MAX_BITS
from headcount.common.errors import InputError
from headcount.common.files import (
    ModelFileError,
    TensorShapes,
    atomic_write_safetensors,
    check_version,
    config_info,
    config_int,
    read_config,
    show_path,
)

BOOLEAN_FORMAT = "headcount-boolean"
BOOLEAN_VERSION = 1
# Bounds on what a file may ask (issue 13), checked before any exact number is built; the message
# names the bound broken. The work `boolean check` then does is bounded by its own estimate
# (boolean/certification.py).
MAX_FILE_BYTES = 64 << 20  # JSON config: xor at n = H = 1024, D = 1 writes 23 MB of exact rationals
#: H: `boolean construct` stops near 600 heads (its exact-work bound); room to spare
MAX_FILE_HEADS = 1024
#: d: Theorem 3 needs ≤ 2⌈log₂ H⌉ + 2 = 22 at H = 1024; trained models use that bound
MAX_FILE_DIM = 64
#: D: `boolean construct` writes D up to ~10^5 (n = 1) within its work bound
MAX_FILE_DEGREE = 1 << 20
#: readout terms: a trained readout holds all C(d+D, D): 12,870 at d = D = 8
MAX_FILE_TERMS = 1 << 18
MAX_FILE_N = MAX_BITS  # info.n: the most input bits any command takes (task.MAX_BITS)


def _config(
    layer: BooleanLayer, readout: Readout, info: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The JSON config of a model file: every number an exact rational string."""
    return {
        "format": BOOLEAN_FORMAT,
        "version": BOOLEAN_VERSION,
        "heads": layer.n_heads,
        "dim": layer.dim,
        "degree": readout.degree,
        "layer": [
            {
                "w0": str(h.w0),
                "w1": str(h.w1),
                "v0": [str(x) for x in h.v0],
                "v1": [str(x) for x in h.v1],
            }
            for h in layer.heads
        ],
        "readout": [[list(K), str(c)] for K, c in sorted(readout.terms.items())],
        "info": dict(info or {}),
    }


def _tensors(layer: BooleanLayer, readout: Readout) -> dict[str, np.ndarray]:
    """float64 roundings of the model, for inspection only."""
    f = fmpq_to_float
    terms = sorted(readout.terms.items())
    return {
        "heads.w": np.array([[f(h.w0), f(h.w1)] for h in layer.heads], dtype=np.float64),
        "heads.values": np.array(
            [[[f(x) for x in h.v0], [f(x) for x in h.v1]] for h in layer.heads], dtype=np.float64
        ),
        "readout.exponents": np.array([K for K, _ in terms], dtype=np.int64).reshape(
            len(terms), layer.dim
        ),
        "readout.coefficients": np.array([f(c) for _, c in terms], dtype=np.float64),
    }


def save_boolean(
    layer: BooleanLayer,
    readout: Readout,
    path: str | os.PathLike,
    info: Mapping[str, Any] | None = None,
) -> None:
    """Write an exact Boolean model to one safetensors file (atomic, no pickle). The JSON config
    under the metadata key "headcount" holds every weight, value and coefficient as an exact
    rational string ("p/q"); the tensors (heads.w [H 2], heads.values [H 2 d], readout.exponents [m
    d], readout.coefficients [m]) are float64 roundings for quick inspection — load_boolean reads
    the exact strings."""
    check_dims(layer, readout)
    tensors = _tensors(layer, readout)
    meta = {"headcount": json.dumps(_config(layer, readout, info))}
    atomic_write_safetensors(path, tensors, meta)


def _check_layer(config: Mapping[str, Any], H: int, d: int) -> None:
    """The heads' and readout's JSON shapes: lists of exact rationals, "p" or "p/q" strings or
    integers (never floats, NaN or infinities), before any is parsed."""
    layer, terms = config.get("layer"), config.get("readout")
    if (
        not isinstance(layer, list)
        or len(layer) != H
        or not all(isinstance(h, dict) for h in layer)
    ):
        raise InputError(f"'layer' must list heads = {H} objects {{w0, w1, v0, v1}}")
    if not isinstance(terms, list) or len(terms) > MAX_FILE_TERMS:
        raise InputError(
            f"'readout' must list at most {MAX_FILE_TERMS} terms [exponents, coefficient]"
        )
    if not all(isinstance(h.get(v), list) and len(h[v]) == d for h in layer for v in ("v0", "v1")):
        raise InputError(f"every head's v0 and v1 must be lists of d = {d} rationals")
    numbers = chain.from_iterable([h.get("w0"), h.get("w1"), *h["v0"], *h["v1"]] for h in layer)
    for x in chain(numbers, (t[-1] if isinstance(t, list) and t else t for t in terms)):
        if isinstance(x, bool) or not isinstance(x, (str, int)):
            raise InputError(
                f"exact rationals are strings 'p' or 'p/q' (or integers), got {str(x)[:40]!r}"
            )


def _model_from_config(config: Mapping[str, Any], path: str) -> BooleanModel:
    """The model a file's config describes, every count bounded first;
    ModelFileError, KeyError, TypeError or ValueError (InputError included) when it is not valid."""
    what = BOOLEAN_FORMAT
    check_version(config, path, BOOLEAN_FORMAT, (BOOLEAN_VERSION,))
    H = config_int(config, "heads", path, what, 1, MAX_FILE_HEADS)
    d = config_int(config, "dim", path, what, 1, MAX_FILE_DIM)
    D = config_int(config, "degree", path, what, 1, MAX_FILE_DEGREE)
    info = config_info(config, path, what)
    if "n" in info:
        config_int(info, "n", path, what, 1, MAX_FILE_N, name="info.n")
    _check_layer(config, H, d)
    terms = config["readout"]
    shapes = TensorShapes(
        path, what
    )  # the float64 roundings, for inspection: shapes checked, not loaded
    shapes.expect("heads.w", (H, 2), "[H 2]")
    shapes.expect("heads.values", (H, 2, d), "[H 2 d]")
    shapes.expect("readout.exponents", (len(terms), d), "[terms d]", ("I64",), empty=True)
    shapes.expect("readout.coefficients", (len(terms),), "[terms]", empty=True)
    shapes.only(["heads.w", "heads.values", "readout.exponents", "readout.coefficients"])
    rationals = [
        [to_fmpq(x) for x in (h["w0"], h["w1"], *h["v0"], *h["v1"])] for h in config["layer"]
    ]
    heads = tuple(
        BooleanHead(r[0], r[1], tuple(r[2 : 2 + d]), tuple(r[2 + d :])) for r in rationals
    )
    readout: dict[tuple[int, ...], fmpq] = {}
    for K, c in terms:
        if (
            not isinstance(K, list)
            or len(K) != d
            or not all(type(k) is int and 0 <= k <= D for k in K)
        ):
            raise InputError(
                f"readout exponents {str(K)[:60]} must be {d} integers in 0..D = 0..{D}"
            )
        readout[tuple(K)] = readout.get(tuple(K), fmpq(0)) + to_fmpq(c)
    return BooleanModel(BooleanLayer(heads), Readout(readout, D, d), info)


def load_boolean(path: str | os.PathLike) -> BooleanModel:
    """The model in a file written by save_boolean; ModelFileError (a ValueError) if it is not a
    valid one. Bounded: at most MAX_FILE_BYTES of JSON, counts within the MAX_FILE_ bounds,
    rationals "p" or "p/q" within MAX_RATIONAL_DIGITS, every tensor's shape checked against the
    config (none is loaded)."""
    config = read_config(path, formats=(BOOLEAN_FORMAT,), max_bytes=MAX_FILE_BYTES)
    path = os.fsdecode(path)
    try:
        return _model_from_config(config, path)
    except ModelFileError:
        raise
    except InputError as err:  # a rational that is not one, a head that is not one
        raise ModelFileError(
            f"{show_path(path)} is not a valid headcount-boolean model: {err}"
        ) from None
    except (KeyError, TypeError, ValueError) as err:
        raise ModelFileError(
            f"{show_path(path)} is not a valid headcount-boolean model: {type(err).__name__}: {err}"
        ) from None
