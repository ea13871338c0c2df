"""Corrupt and malicious model files (issue 13): every one is refused with a ModelFileError (an
InputError: exit 2, one line) — never a traceback, a hang, a memory blow-up, code run or a module
imported from a file.

Each case builds one small file from a good one (a transformer, a one-layer table, a minmax model, a
Boolean model) and breaks one thing: header lies, truncation, pickles, huge integers, deep nesting,
exponent strings, wrong shapes, NaN/inf, unknown decoder kinds, wrong versions, huge counts, bad
paths. A few go through `headcount.cli.main` (all six `--model` commands) to check the exit code and
the one line.
"""

from __future__ import annotations

import json
import os
import pickle
import re
import stat
import struct
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest
from flint import fmpq, fmpz
from safetensors import safe_open
from safetensors.numpy import save_file

import headcount.common.files as files
import headcount.core.model.files as io
from headcount.boolean.model import MAX_RATIONAL_DIGITS, BooleanHead, BooleanLayer, Readout, to_fmpq
from headcount.boolean.model_file import MAX_FILE_DEGREE, MAX_FILE_HEADS, load_boolean, save_boolean
from headcount.cli import main
from headcount.common.errors import InputError
from headcount.core.model.files import ModelFileError, load_model, save_model
from headcount.induction.certification import certify_induction
from headcount.induction.construction import one_layer_induction, two_layer_induction
from headcount.induction.lower_bound.minimal import packed_one_layer_induction
from headcount.induction.source import ModelSource
from headcount.minmax.model import load_minmax, random_single_head, save_minmax

BIG = "1" * 5000  # a 5000-digit integer: Python's int() refuses > 4300 digits


def _read(path: Path) -> tuple[dict[str, np.ndarray], dict]:
    with safe_open(str(path), framework="np") as f:
        return {k: f.get_tensor(k) for k in f.keys()}, json.loads(f.metadata()["headcount"])


def _write(path: Path, tensors: dict[str, np.ndarray], config) -> Path:
    text = config if isinstance(config, str) else json.dumps(config)
    save_file(tensors, str(path), metadata={"headcount": text.replace('"__BIG__"', BIG)})
    return path


def _base(kind: str, tmp_path: Path) -> tuple[dict[str, np.ndarray], dict]:
    path = tmp_path / f"base-{kind}.safetensors"
    if kind == "two":
        save_model(two_layer_induction(4, 2), path)
    elif kind == "table":
        save_model(one_layer_induction(4, 2), path)
    elif kind == "packed":
        save_model(packed_one_layer_induction(4, 2, 2, 0), path)
    elif kind == "minmax":
        save_minmax(random_single_head(np.random.default_rng(0), 6, 3), path)
    else:
        layer = BooleanLayer(
            (BooleanHead(1, 2, (1, 0), (-1, 3)), BooleanHead("1/3", 5, (2, -1), (0, 1)))
        )
        save_boolean(layer, Readout({(1, 0): 1, (0, 1): "-1/4", (0, 0): 2}, 2, 2), path, {"n": 4})
    return _read(path)


LOADERS = {
    "two": load_model,
    "table": load_model,
    "packed": load_model,
    "minmax": load_minmax,
    "boolean": load_boolean,
}


def _edited(kind: str, edit):
    """A case: the good `kind` file with `edit(tensors, config)` applied (it may return a new config
    text)."""

    def build(tmp_path: Path) -> Path:
        tensors, config = _base(kind, tmp_path)
        text = edit(tensors, config)
        return _write(tmp_path / "m.safetensors", tensors, config if text is None else text)

    return kind, build


def _raw(data: bytes, kind: str = "two"):
    def build(tmp_path: Path) -> Path:
        path = tmp_path / "raw.safetensors"
        path.write_bytes(data)
        return path

    return kind, build


def _header(header: dict, data: bytes = b"", length: int | None = None) -> bytes:
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text) if length is None else length) + text + data


def _meta(config: dict) -> dict:
    return {"__metadata__": {"headcount": json.dumps(config)}}


GOOD_TWO = {
    "format": "headcount-transformer",
    "version": 1,
    "mask": "causal",
    "layers": [],
    "info": {},
}


def _set(path: list, value):
    """An edit setting config[path…] = value."""

    def edit(tensors, config):
        target = config
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return edit


def _tensor(name: str, value):
    return lambda tensors, config: tensors.__setitem__(name, np.asarray(value))


def _drop(name: str):
    return lambda tensors, config: [tensors.pop(name), None][1]


def _truncated(kind: str, fraction: float):
    def build(tmp_path: Path) -> Path:
        tensors, config = _base(kind, tmp_path)
        good = _write(tmp_path / "good.safetensors", tensors, config).read_bytes()
        path = tmp_path / "cut.safetensors"
        path.write_bytes(good[: max(1, int(len(good) * fraction))])
        return path

    return kind, build


def _many_entries(count: int):
    """The good transformer file with `count` more (empty) tensors listed in its header."""

    def build(tmp_path: Path) -> Path:
        tensors, config = _base("two", tmp_path)
        raw = _write(tmp_path / "small.safetensors", tensors, config).read_bytes()
        length = int.from_bytes(raw[:8], "little")
        header = json.loads(raw[8 : 8 + length])
        header |= {
            f"x{i}": {"dtype": "U8", "shape": [0], "data_offsets": [0, 0]} for i in range(count)
        }
        text = json.dumps(header).encode()
        path = tmp_path / "many.safetensors"
        path.write_bytes(struct.pack("<Q", len(text)) + text + raw[8 + length :])
        return path

    return "two", build


class _Evil:
    def __reduce__(self):
        return (os.system, ("touch /tmp/headcount-pickle-ran",))


def _zip_pickle() -> bytes:
    from io import BytesIO

    buffer = BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr("archive/data.pkl", pickle.dumps(_Evil()))
    return buffer.getvalue()


def _deep(depth: int) -> str:
    config = dict(GOOD_TWO, info={"x": "__DEEP__"})
    return json.dumps(config).replace('"__DEEP__"', "[" * depth + "]" * depth)


CASES = {
    # --- not safetensors at all, pickles, header lies, truncation ---
    "pickle": _raw(pickle.dumps(_Evil())),
    "pickle-minmax": _raw(pickle.dumps(_Evil()), "minmax"),
    "pickle-boolean": _raw(pickle.dumps(_Evil()), "boolean"),
    "torch-zip-pickle": _raw(_zip_pickle()),
    "empty": _raw(b""),
    "text": _raw(b"hello world\n"),
    "header-length-2^63": _raw(struct.pack("<Q", 2**63 - 1) + b"{}"),
    "header-length-past-end": _raw(_header(_meta(GOOD_TWO), length=10**6)),
    "header-not-json": _raw(struct.pack("<Q", 5) + b"{nope"),
    "header-offsets-past-end": _raw(
        _header(
            _meta(GOOD_TWO) | {"W_E": {"dtype": "F64", "shape": [2, 2], "data_offsets": [0, 32]}}
        )
    ),
    "header-shape-lie": _raw(
        _header(
            _meta(GOOD_TWO)
            | {"W_E": {"dtype": "F64", "shape": [10**9, 10**9], "data_offsets": [0, 8]}},
            b"\0" * 8,
        )
    ),
    "header-unknown-dtype": _raw(
        _header(
            _meta(GOOD_TWO) | {"W_E": {"dtype": "Q99", "shape": [1], "data_offsets": [0, 8]}},
            b"\0" * 8,
        )
    ),
    "header-dtype-an-object": _raw(
        _header(
            _meta(GOOD_TWO) | {"W_E": {"dtype": {"a": 1}, "shape": [1], "data_offsets": [0, 8]}},
            b"\0" * 8,
        )
    ),
    "header-40-axes": _raw(
        _header(
            _meta(GOOD_TWO) | {"W_E": {"dtype": "F64", "shape": [1] * 40, "data_offsets": [0, 8]}},
            b"\0" * 8,
        )
    ),
    "header-negative-shape": _raw(
        _header(
            _meta(GOOD_TWO) | {"W_E": {"dtype": "F64", "shape": [-1, -8], "data_offsets": [0, 64]}}
        )
    ),
    "header-metadata-not-strings": _raw(_header({"__metadata__": {"headcount": {"format": "x"}}})),
    "header-20000-entries": _many_entries(20_000),
    "truncated-half": _truncated("two", 0.5),
    "truncated-last-byte": _truncated("two", 0.999),
    "truncated-table": _truncated("table", 0.7),
    "truncated-minmax": _truncated("minmax", 0.6),
    "truncated-boolean": _truncated("boolean", 0.9),
    "truncated-8-bytes": _truncated("two", 0.001),
    # --- metadata: huge integers, deep nesting, size, wrong JSON types ---
    "5000-digit-version": _edited("two", _set(["version"], "__BIG__")),
    "5000-digit-in-info": _edited("two", _set(["info", "seed"], "__BIG__")),
    "5000-digit-heads": _edited("two", _set(["layers", 0, "heads"], "__BIG__")),
    "5000-digit-readout-n-ctx": _edited("table", _set(["decoder", "config", "n_ctx"], "__BIG__")),
    "5000-digit-minmax-M": _edited("minmax", _set(["M"], "__BIG__")),
    "5000-digit-boolean-w0": _edited("boolean", _set(["layer", 0, "w0"], "__BIG__")),
    "5000-digit-boolean-n": _edited("boolean", _set(["info", "n"], "__BIG__")),
    "deep-100000": _edited("two", lambda t, c: _deep(100_000)),
    "deep-33": _edited("two", lambda t, c: _deep(33)),
    "deep-boolean": _edited(
        "boolean", lambda t, c: json.dumps(c)[:-1] + ', "x": ' + "[" * 5000 + "]" * 5000 + "}"
    ),
    "metadata-over-1MiB": _edited(
        "two", _set(["info", "pad"], "x" * (files.MAX_METADATA_BYTES + 1))
    ),
    "config-a-list": _edited("two", lambda t, c: "[1, 2]"),
    "config-null": _edited("two", lambda t, c: "null"),
    "config-not-json": _edited("two", lambda t, c: "{nope"),
    "info-a-string": _edited("two", _set(["info"], "abc")),
    "info-a-list-table": _edited("table", _set(["info"], [1, 2])),
    "info-a-string-minmax": _edited("minmax", _set(["info"], "abc")),
    "info-a-string-boolean": _edited("boolean", _set(["info"], "abc")),
    "heads-Infinity": _edited("two", _set(["layers", 0, "heads"], float("inf"))),
    "heads-NaN": _edited("two", _set(["layers", 0, "heads"], float("nan"))),
    "heads-float": _edited("two", _set(["layers", 0, "heads"], 2.0)),
    "heads-string": _edited("two", _set(["layers", 0, "heads"], "2")),
    "heads-true": _edited("two", _set(["layers", 1, "heads"], True)),
    "mlp-a-string": _edited("two", _set(["layers", 0, "mlp"], "yes")),
    "mask-unknown": _edited("two", _set(["mask"], "sideways")),
    "minmax-heads-Infinity": _edited("minmax", _set(["heads"], float("inf"))),
    "boolean-degree-NaN": _edited("boolean", _set(["degree"], float("nan"))),
    # --- versions ---
    "version-2": _edited("two", _set(["version"], 2)),
    "version-0-table": _edited("table", _set(["version"], 0)),
    "version-string": _edited("two", _set(["version"], "1")),
    "version-true": _edited("two", _set(["version"], True)),
    "version-float": _edited("two", _set(["version"], 1.0)),
    "version-missing": _edited("two", lambda t, c: c.pop("version") and None),
    "version-minmax-2": _edited("minmax", _set(["version"], 2)),
    "version-boolean-99": _edited("boolean", _set(["version"], 99)),
    # --- decoder kinds: named, never imported from a file ---
    "decoder-os-system": _edited("two", _set(["decoder", "kind"], "os.system")),
    "decoder-module-path": _edited(
        "two", _set(["decoder", "kind"], "headcount.core.model.files:load_model")
    ),
    "decoder-antigravity": _edited("two", _set(["decoder", "kind"], "antigravity")),
    "decoder-kind-int": _edited("two", _set(["decoder", "kind"], 3)),
    "decoder-a-string": _edited("two", _set(["decoder"], "linear")),
    "decoder-config-a-list": _edited("two", _set(["decoder", "config"], [1])),
    "readout-n-ctx-lie": _edited("table", _set(["decoder", "config", "n_ctx"], 3)),
    "readout-n-ctx-string": _edited("table", _set(["decoder", "config", "n_ctx"], "4")),
    "packed-n-ctx-lie": _edited("packed", _set(["decoder", "config", "n_ctx"], 3)),
    "packed-slots-lie": _edited("packed", _set(["decoder", "config", "slots"], 3)),
    "packed-slots-string": _edited("packed", _set(["decoder", "config", "slots"], "2")),
    "packed-base-10^9": _edited("packed", _set(["decoder", "config", "base"], 10**9)),
    "packed-offset-7": _edited("packed", _set(["decoder", "config", "offset"], 7)),
    # --- huge counts without the tensors ---
    "80000-heads": _edited("two", _set(["layers", 0, "heads"], 80_000)),
    "1000-heads": _edited("two", _set(["layers", 0, "heads"], 1000)),
    "10^9-layers-list": _edited("two", _set(["layers"], [{"heads": 1}] * (io.MAX_LAYERS + 1))),
    "layers-a-number": _edited("two", _set(["layers"], 10**9)),
    "one-more-layer": _edited("two", lambda t, c: c["layers"].append({"heads": 1, "mlp": True})),
    "minmax-80000-heads": _edited("minmax", _set(["heads"], 80_000)),
    "minmax-3-heads": _edited("minmax", _set(["heads"], 3)),
    "boolean-80000-heads": _edited("boolean", _set(["heads"], 80_000)),
    "boolean-degree-10^9": _edited("boolean", _set(["degree"], 10**9)),
    "boolean-info-n-10^9": _edited("boolean", _set(["info", "n"], 10**9)),
    "boolean-dim-10^9": _edited("boolean", _set(["dim"], 10**9)),
    "boolean-heads-lie": _edited("boolean", _set(["heads"], 3)),
    # --- exact rationals: no exponents, no whitespace tricks, bounded length ---
    "rational-1e10000000": _edited("boolean", _set(["layer", 0, "w0"], "1e10000000")),
    "rational-1e-100000000": _edited("boolean", _set(["layer", 0, "w1"], "1e-100000000")),
    "rational-1E5": _edited("boolean", _set(["layer", 1, "v0", 0], "1E5")),
    "rational-decimal": _edited("boolean", _set(["layer", 0, "v1", 1], "0.25")),
    "rational-spaces": _edited("boolean", _set(["layer", 0, "w0"], " 3 ")),
    "rational-underscore": _edited("boolean", _set(["layer", 0, "w0"], "1_000")),
    "rational-hex": _edited("boolean", _set(["layer", 0, "w0"], "0x10")),
    "rational-inf": _edited("boolean", _set(["layer", 0, "w0"], "inf")),
    "rational-nan": _edited("boolean", _set(["layer", 0, "w0"], "nan")),
    "rational-zero-denominator": _edited("boolean", _set(["layer", 0, "w0"], "1/0")),
    "rational-unicode-digits": _edited("boolean", _set(["layer", 0, "w0"], "٣")),
    "rational-double-slash": _edited("boolean", _set(["layer", 0, "w0"], "1//2")),
    "rational-too-long": _edited(
        "boolean", _set(["layer", 0, "w0"], "7" * (MAX_RATIONAL_DIGITS + 1))
    ),
    "rational-denominator-too-long": _edited(
        "boolean", _set(["readout", 0, 1], "1/" + "3" * (MAX_RATIONAL_DIGITS + 1))
    ),
    "rational-float": _edited("boolean", _set(["layer", 0, "w0"], 0.5)),
    "rational-NaN-constant": _edited("boolean", _set(["layer", 0, "w1"], float("nan"))),
    "rational-Infinity-constant": _edited("boolean", _set(["readout", 0, 1], float("inf"))),
    "rational-null": _edited("boolean", _set(["layer", 0, "w0"], None)),
    "rational-negative-weight": _edited("boolean", _set(["layer", 0, "w0"], "-1")),
    "boolean-values-too-short": _edited("boolean", _set(["layer", 0, "v0"], ["1"])),
    "boolean-exponent-too-big": _edited("boolean", _set(["readout", 0, 0], [5, 0])),
    "boolean-exponent-negative": _edited("boolean", _set(["readout", 0, 0], [-1, 0])),
    "boolean-term-not-a-pair": _edited("boolean", _set(["readout", 0], ["1"])),
    # --- wrong shapes, dtypes, NaN/inf weights, extra or missing tensors ---
    "W_U-wrong-width": _edited("two", _tensor("decoder.W_U", np.zeros((19, 2)))),
    "b_U-wrong-length": _edited("two", _tensor("decoder.b_U", np.zeros(4))),
    "W_E-1d": _edited("two", _tensor("W_E", np.zeros(19))),
    "W_pos-wrong-width": _edited("two", _tensor("W_pos", np.zeros((4, 7)))),
    "W_Q-wrong-rows": _edited("two", _tensor("layers.0.heads.0.W_Q", np.zeros((18, 3)))),
    "W_K-not-W_Q": _edited("two", _tensor("layers.0.heads.0.W_K", np.zeros((19, 5)))),
    "W_O-wrong": _edited("two", _tensor("layers.1.heads.0.W_O", np.zeros((3, 18)))),
    "W_E-zero-rows": _edited("two", _tensor("W_E", np.zeros((0, 19)))),
    "W_E-int8": _edited("two", _tensor("W_E", np.zeros((2, 19), dtype=np.int8))),
    "W_E-bool": _edited("two", _tensor("W_E", np.zeros((2, 19), dtype=bool))),
    "W_E-NaN": _edited("two", lambda t, c: t["W_E"].__setitem__((0, 0), np.nan)),
    "W_U-inf": _edited("two", lambda t, c: t["decoder.W_U"].__setitem__((0, 0), np.inf)),
    "extra-tensor": _edited("two", _tensor("layers.0.heads.9.W_Q", np.zeros((19, 3)))),
    "missing-W_V": _edited("two", _drop("layers.0.heads.1.W_V")),
    "table-V-wrong": _edited("table", _tensor("V", np.zeros((1, 4, 2, 4)))),
    "table-Q-wrong-alphabet": _edited("table", _tensor("Q", np.zeros((1, 4, 3, 1)))),
    "table-K-not-Q": _edited("table", _tensor("K", np.zeros((1, 4, 2, 2)))),
    "table-embed-2d": _edited("table", _tensor("embed", np.zeros((4, 5)))),
    "table-NaN": _edited("table", lambda t, c: t["V"].__setitem__((0, 0, 0, 0), np.nan)),
    "minmax-values-wrong": _edited("minmax", _tensor("heads.0.values", np.zeros((5, 99)))),
    "minmax-theta-wrong": _edited("minmax", _tensor("classifier_max.theta", np.zeros((6, 1)))),
    "minmax-NaN-scores": _edited("minmax", lambda t, c: t["heads.0.scores"].__setitem__(0, np.nan)),
    "minmax-missing": _edited("minmax", _drop("heads.0.values")),
    "minmax-M-lie": _edited("minmax", _set(["M"], 7)),
    "boolean-heads-w-wrong": _edited("boolean", _tensor("heads.w", np.zeros((3, 2)))),
    "boolean-extra-tensor": _edited("boolean", _tensor("W_E", np.zeros(2))),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_file_is_refused(tmp_path, name):
    kind, build = CASES[name]
    path = build(tmp_path)
    before = set(sys.modules)
    start = time.process_time()  # CPU time: a guard against an unbounded parse, whatever the load
    with pytest.raises(ModelFileError) as info:
        LOADERS[kind](path)
    assert time.process_time() - start < 30
    message = str(info.value)
    assert "\n" not in message and len(message) < 800, message
    assert isinstance(info.value, InputError)
    assert not Path("/tmp/headcount-pickle-ran").exists()
    assert {"antigravity", "this"}.isdisjoint(set(sys.modules) - before)


def test_there_are_at_least_60_cases():
    assert len(CASES) >= 60


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        (
            "5000-digit-in-info",
            f"a number of 5,000 digits; allowed at most {files.MAX_METADATA_INT_DIGITS}",
        ),
        ("deep-100000", f"nests 100002 levels deep; allowed at most {files.MAX_METADATA_DEPTH}"),
        ("metadata-over-1MiB", f"model files hold at most {files.MAX_METADATA_BYTES:,}"),
        ("version-2", "version 2 is not supported; it reads version 1"),
        ("version-minmax-2", "valid headcount-minmax model: version 2 is not supported"),
        ("version-boolean-99", "valid headcount-boolean model: version 99 is not supported"),
        ("heads-Infinity", "'heads' must be an integer, got inf"),
        ("info-a-string", "'info' must be a JSON object, got 'abc'"),
        (
            "W_U-wrong-width",
            "tensor 'decoder.b_U' has shape [3], expected [2] = [classes] (the columns of "
            "decoder.W_U)",
        ),
        ("W_Q-wrong-rows", "tensor 'layers.0.heads.0.W_Q' has shape [18, 3], expected [19, '*']"),
        ("table-V-wrong", "tensor 'V' has shape [1, 4, 2, 4], expected [1, 4, 2, 5]"),
        ("80000-heads", f"allowed 0..{files.MAX_HEADS_PER_LAYER}"),
        ("1000-heads", "tensor 'layers.0.heads.2.W_Q' is missing"),
        ("10^9-layers-list", f"model files hold at most {io.MAX_LAYERS}"),
        ("decoder-os-system", "unknown decoder kind 'os.system'"),
        ("W_E-NaN", "tensor 'W_E' holds NaN or infinite values"),
        ("W_E-int8", "tensor 'W_E' has dtype I8, expected F64 or F32 or F16"),
        ("extra-tensor", "it holds tensors its config does not describe ('layers.0.heads.9.W_Q')"),
        ("boolean-80000-heads", f"'heads' = 80000 is out of range: allowed 1..{MAX_FILE_HEADS}"),
        ("boolean-degree-10^9", f"allowed 1..{MAX_FILE_DEGREE}"),
        ("boolean-info-n-10^9", "info.n = 1000000000 is out of range"),
        (
            "rational-1e10000000",
            "not a rational number: '1e10000000' (write p or p/q in digits, no exponent)",
        ),
        (
            "rational-too-long",
            f"has {MAX_RATIONAL_DIGITS + 1:,} digits; allowed at most {MAX_RATIONAL_DIGITS:,}",
        ),
        ("rational-float", "exact rationals are strings 'p' or 'p/q' (or integers)"),
        (
            "minmax-80000-heads",
            f"'heads' = 80000 is out of range: allowed 1..{files.MAX_HEADS_PER_LAYER}",
        ),
        ("minmax-M-lie", "tensor 'classifier_min.theta' has shape [6, 3], expected [7, 3] = [M d]"),
        ("readout-n-ctx-lie", "induction_readout"),
        ("packed-n-ctx-lie", "reads n_ctx = 3 positions from d_model = slots = 2"),
        ("packed-slots-lie", "d_model = slots = 3; the model has n_ctx = 4, d_model = 2"),
        ("packed-base-10^9", "base must be ≤ 65536"),
        ("packed-offset-7", "offset must be ≤ 1"),
    ],
)
def test_messages_name_the_limit_or_the_tensor(tmp_path, name, fragment):
    kind, build = CASES[name]
    with pytest.raises(ModelFileError) as info:
        LOADERS[kind](build(tmp_path))
    assert fragment in str(info.value), str(info.value)


def _sparse(kind: str, tmp_path: Path, replace: str | None, shape: list[int]) -> Path:
    """The good `kind` file with a sparse float64 tensor of `shape` (`replace`: in place of that
    tensor, else an extra one "zz"): gigabytes on paper, nothing on disk."""
    tensors, config = _base(kind, tmp_path)
    if replace:
        tensors.pop(replace)
    raw = _write(tmp_path / "small.safetensors", tensors, config).read_bytes()
    length = int.from_bytes(raw[:8], "little")
    header, data = json.loads(raw[8 : 8 + length]), raw[8 + length :]
    size = 8 * int(np.prod(shape, dtype=object))
    header[replace or "zz"] = {
        "dtype": "F64",
        "shape": shape,
        "data_offsets": [len(data), len(data) + size],
    }
    text = json.dumps(header).encode()
    path = tmp_path / "sparse.safetensors"
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)
        f.truncate(8 + len(text) + len(data) + size)
    return path


@pytest.mark.parametrize(
    ("kind", "replace", "fragment"),
    [
        ("two", None, "tensors its config does not describe ('zz')"),
        ("minmax", None, "its config describes 4 tensors, the file holds 5"),
        ("boolean", None, "tensors its config does not describe ('zz')"),
        ("two", "W_E", "tensor 'W_E' has shape [8589934592], expected ['*', '*']"),
    ],
)
def test_a_sparse_64_gib_tensor_is_refused_from_the_header(
    tmp_path, monkeypatch, kind, replace, fragment
):
    """Never memory-mapped nor loaded: the header alone refuses it (under an address-space cap,
    mapping the file would fail with MemoryError)."""
    path = _sparse(kind, tmp_path, replace, [2**33])
    monkeypatch.setattr(files, "load_file", lambda *a, **k: pytest.fail("tensors loaded"))
    monkeypatch.setattr("safetensors.safe_open", lambda *a, **k: pytest.fail("file mapped"))
    with pytest.raises(ModelFileError, match=re.escape(fragment)):
        LOADERS[kind](path)


def test_a_sparse_tensor_of_the_right_shape_meets_the_memory_guard(tmp_path, monkeypatch):
    from headcount.common.resources import memory_limit_of

    path = _sparse(
        "two", tmp_path, "W_pos", [2**28, 19]
    )  # n_ctx = 2^28: 38 GiB of float64 on paper
    monkeypatch.setattr(files, "load_file", lambda *a, **k: pytest.fail("tensors loaded"))
    with memory_limit_of("1G"), pytest.raises(InputError, match="loading .* max_memory") as refused:
        load_model(path)
    assert refused.value.param == "max_memory"


# --- paths
# -------------------------------------------------------------------------------------------


def _expect_path_error(path, *fragments: str) -> None:
    for loader in (load_model, load_minmax, load_boolean):
        with pytest.raises(ModelFileError) as info:
            loader(path)
        message = str(info.value)
        assert "\n" not in message and len(message) < 400, message
        for fragment in fragments:
            assert fragment in message, message


def test_a_5000_character_path(tmp_path):
    _expect_path_error(
        str(tmp_path / ("x" * 5000)), "cannot be opened", "File name too long", "characters)"
    )


def test_a_long_path_of_short_names(tmp_path):
    _expect_path_error("/".join(["a" * 200] * 30), "cannot be opened")


def test_a_folder(tmp_path):
    _expect_path_error(tmp_path, "is a folder")


def test_a_fifo_never_blocks(tmp_path):
    fifo = tmp_path / "pipe.safetensors"
    os.mkfifo(fifo)
    start = time.perf_counter()
    _expect_path_error(fifo, "not a regular file")
    assert (
        time.perf_counter() - start < 60
    )  # a block uses no CPU, so the clock tells: generous for load


def test_dev_null():
    _expect_path_error("/dev/null", "not a regular file")


def test_a_dangling_symlink(tmp_path):
    (tmp_path / "link.safetensors").symlink_to(tmp_path / "gone.safetensors")
    _expect_path_error(
        tmp_path / "link.safetensors", "does not exist", "symbolic link to a missing file"
    )


def test_a_symlink_loop(tmp_path):
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    _expect_path_error(tmp_path / "a", "cannot be opened")


def test_a_nul_byte_in_the_path(tmp_path):
    _expect_path_error(str(tmp_path) + "/m\0.safetensors", "cannot be opened")


def test_a_symlink_to_a_good_file_is_read(tmp_path):
    save_model(two_layer_induction(4, 2), tmp_path / "m.safetensors")
    (tmp_path / "link.safetensors").symlink_to(tmp_path / "m.safetensors")
    assert load_model(tmp_path / "link.safetensors").heads_per_layer == [2, 1]


def test_a_file_without_permission(tmp_path, monkeypatch):
    path = tmp_path / "m.safetensors"
    save_model(two_layer_induction(4, 2), path)
    os.chmod(path, 0)
    if os.geteuid() != 0:  # root reads anything: then the refusal is simulated below
        _expect_path_error(path, "cannot be opened", "Permission denied")
    real_open = os.open

    def refusing(name, *args, **kwargs):
        if os.fsdecode(name) == str(path):
            raise PermissionError(13, "Permission denied")
        return real_open(name, *args, **kwargs)

    monkeypatch.setattr(files.os, "open", refusing)
    _expect_path_error(path, "cannot be opened: Permission denied")
    os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)


# --- labels from a file are labels, and what still loads
# ---------------------------------------------


def test_file_label_is_reported_as_a_label_never_as_a_construction(tmp_path):
    tensors, config = _base("two", tmp_path)
    for name in tensors:
        tensors[name] = np.where(
            tensors[name] != 0, 1e-3, 0.0
        )  # not the construction's weights any more
    path = _write(tmp_path / "liar.safetensors", tensors, config)
    result = certify_induction(ModelSource(path), 4, 2, samples=4).to_json()
    assert result["file_label"] == "two_layer_induction" and "construction" not in result
    built = certify_induction(ModelSource(layers=2), 4, 2, samples=4).to_json()
    assert built["construction"] == "two_layer_induction" and "file_label" not in built


def test_good_files_still_load(tmp_path):
    for kind in ("two", "table", "minmax", "boolean"):
        tensors, config = _base(kind, tmp_path)
        LOADERS[kind](_write(tmp_path / f"{kind}.safetensors", tensors, config))


def test_float32_weights_load_as_float64(tmp_path):
    tensors, config = _base("two", tmp_path)
    tensors = {k: v.astype(np.float32) for k, v in tensors.items()}
    model = load_model(_write(tmp_path / "f32.safetensors", tensors, config))
    assert model.W_E.dtype == np.float64


def test_exact_rationals_accept_p_and_p_over_q_only():
    assert to_fmpq("-3/4") == to_fmpq(-3) / 4 and to_fmpq("+5") == 5 and to_fmpq("0") == 0
    longest = "9" * MAX_RATIONAL_DIGITS
    assert to_fmpq(f"-{longest}/7") == -fmpq(fmpz(longest), 7)
    for bad in (
        "1e5",
        "1.5",
        " 1",
        "1 ",
        "1/0",
        "1/-2",
        "inf",
        "",
        "٣",
        "9" * (MAX_RATIONAL_DIGITS + 1),
    ):
        with pytest.raises(InputError):
            to_fmpq(bad)


def test_a_huge_exponent_string_is_refused_at_once():
    start = time.process_time()  # CPU time: what the machine's load does not change
    for bad in ("1e10000000", "1e-100000000", "1" * 10**6):
        with pytest.raises(InputError):
            to_fmpq(bad)
    assert time.process_time() - start < 1


def test_the_metadata_size_bound_is_the_loaders_own(tmp_path):
    """Boolean files carry their exact rationals in the metadata: their bound is larger than 1
    MiB."""
    with pytest.raises(ModelFileError, match="at most 10"):
        files.parse_config('{"a": "' + "x" * 20 + '"}', "'f'", max_bytes=10)
    assert files.parse_config('{"a": [[1]]}', "'f'") == {"a": [[1]]}


# --- through the command line: exit 2, one line, for each of the six --model commands
# -----------------

COMMANDS = {
    "predict": ("two", ["induction", "predict", "--model", "{}", "--input", "0 1"]),
    "certify": ("two", ["induction", "certify", "--model", "{}", "--n", "4", "--alphabet", "2"]),
    "protocol": (
        "table",
        ["induction", "protocol", "--k", "2", "--model", "{}", "--precision-bits", "6"],
    ),
    "refute": ("table", ["induction", "refute", "--k", "2", "--model", "{}"]),
    "minmax": ("minmax", ["minmax", "verify", "--model", "{}", "--M", "6", "--n", "3"]),
    "boolean": ("boolean", ["boolean", "check", "--model", "{}", "--function", "xor"]),
}


def _run(capsys, argv):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
        raise SystemExit(0)
    out, err = capsys.readouterr()
    return exit_info.value.code or 0, out, err


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("hostile", ["5000-digit-in-info", "deep-100000", "version", "fifo"])
def test_every_model_command_exits_2_with_one_line(tmp_path, capsys, command, hostile):
    kind, argv = COMMANDS[command]
    if hostile == "fifo":
        path = tmp_path / "pipe.safetensors"
        os.mkfifo(path)
    elif hostile == "version":
        tensors, config = _base(kind, tmp_path)
        path = _write(tmp_path / "v.safetensors", tensors, dict(config, version=7))
    else:
        tensors, config = _base(kind, tmp_path)
        text = json.dumps(dict(config, info={"x": "__X__"}))
        filler = BIG if hostile == "5000-digit-in-info" else "[" * 100_000 + "]" * 100_000
        path = _write(tmp_path / "h.safetensors", tensors, text.replace('"__X__"', filler))
    code, out, err = _run(capsys, [a.replace("{}", str(path)) for a in argv])
    assert code == 2 and out == "", (code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err


def test_not_a_path():
    for bad in (None, 3, 2.5):
        _expect_path_error(bad, "a model file must be a path")
