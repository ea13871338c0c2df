"""Byte-level variants of valid model files (name → function from the valid file's bytes to the
variant's): the container (header lies, truncation, garbage), the metadata and the shared config
keys (`_generic`), each kind's own config and tensors (transformer, one-layer table, minmax, Boolean
exact rationals), and decoder kinds that name importable modules. files.py writes them and turns
them into cases."""

from __future__ import annotations

import gzip
from collections.abc import Callable

from tests.fuzz import safetensors_raw as st

Variant = Callable[[bytes], bytes]


def _set(path: list, value, raw: str | None = None) -> Callable[[bytes], bytes]:
    """A config variant setting config[path...] = value (or raw JSON text)."""

    def change(config):
        node = config
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = "@@RAW@@" if raw is not None else value

    return lambda blob: st.with_config(blob, change, {"@@RAW@@": raw} if raw is not None else None)


def _drop(key: str) -> Variant:
    return lambda blob: st.with_config(blob, lambda c: c.pop(key, None))


def _tensor_header(change, raw: dict[str, str] | None = None) -> Variant:
    """A header lie about the first tensor (its entry changed by `change(entry)`; placeholders →
    raw)."""

    def variant(blob: bytes) -> bytes:
        first = st.tensor_names(blob)[0]
        return st.with_header(blob, lambda h: change(h[first]), raw)

    return variant


def _offsets(start: int | str, end: int | str) -> Variant:
    def change(entry):
        entry["data_offsets"] = [start, end]

    return _tensor_header(change)


def _all_tensors(fn) -> Variant:
    return lambda blob: st.with_tensors(blob, lambda t: t.update({k: fn(v) for k, v in t.items()}))


def _meta(value) -> Variant:
    return lambda blob: st.with_header(blob, lambda h: h.__setitem__("__metadata__", value))


def _generic() -> dict[str, Variant]:
    """Variants of any model file: the container, the metadata, the config's shared keys."""
    import numpy as np

    cut = lambda f: lambda blob: blob[: f(len(blob))]  # noqa: E731
    v: dict[str, Variant] = {
        "empty file": lambda b: b"",
        "7 bytes": lambda b: b"\x01" * 7,
        "header length 0": lambda b: (0).to_bytes(8, "little") + b[8:],
        "header length 2^64-1": lambda b: st.build(st.parse(b)[0], st.parse(b)[1], 2**64 - 1),
        "header length 2^63": lambda b: st.build(st.parse(b)[0], st.parse(b)[1], 2**63),
        "header length 10^9 (past the end)": lambda b: st.build(
            st.parse(b)[0], st.parse(b)[1], 10**9
        ),
        "header length 10 short": lambda b: st.build(
            st.parse(b)[0], st.parse(b)[1], len(st.dumps(st.parse(b)[0])) - 10
        ),
        "header not UTF-8": lambda b: st.build(b"\xff\xfe{\x80}", b""),
        "header a JSON array": lambda b: st.build("[]"),
        "header null": lambda b: st.build("null"),
        "header 100k-deep": lambda b: st.build('{"x": ' + st.deep_list() + "}"),
        "header 5000-digit shape": _tensor_header(
            lambda e: e.__setitem__("shape", ["@@BIG@@"]), {"@@BIG@@": st.BIG}
        ),
        "truncated by 1 byte": cut(lambda n: n - 1),
        "truncated at half": cut(lambda n: n // 2),
        "truncated in the header": cut(lambda n: 20),
        "garbage after the data": lambda b: b + b"\x00garbage" * 100,
        "all bytes flipped": lambda b: bytes(x ^ 0xFF for x in b),
        "offsets past the end": _offsets(0, 10**12),
        "offsets reversed": _offsets(64, 0),
        "offsets 2^64": _offsets(0, 2**64),
        "offsets negative": _offsets(-8, 8),
        "offsets strings": _offsets("0", "8"),
        "dtype F16 (lie)": _tensor_header(lambda e: e.__setitem__("dtype", "F16")),
        "dtype I8 (lie)": _tensor_header(lambda e: e.__setitem__("dtype", "I8")),
        "dtype BOOL (lie)": _tensor_header(lambda e: e.__setitem__("dtype", "BOOL")),
        "dtype F128 (unknown)": _tensor_header(lambda e: e.__setitem__("dtype", "F128")),
        "dtype object": _tensor_header(lambda e: e.__setitem__("dtype", {"a": 1})),
        "shape product wrong": _tensor_header(lambda e: e.__setitem__("shape", [1, 3])),
        "shape 2^31 x 2^31": _tensor_header(lambda e: e.__setitem__("shape", [2**31, 2**31])),
        "shape negative": _tensor_header(lambda e: e.__setitem__("shape", [-1, -8])),
        "shape 40 dims": _tensor_header(lambda e: e.__setitem__("shape", [1] * 40)),
        "tensor entry a string": _tensor_header(lambda e: e.clear()),
        "duplicate tensor keys": lambda b: st.build(
            st.dumps(st.parse(b)[0]).replace(
                "{", '{"W_E": {"dtype": "F64", "shape": [1], "data_offsets": [0, 8]}, ', 1
            ),
            st.parse(b)[1],
        ),
        "80,000 tensor entries": lambda b: st.with_header(
            b,
            lambda h: h.update(
                {
                    f"x{i}": {"dtype": "U8", "shape": [0], "data_offsets": [0, 0]}
                    for i in range(80_000)
                }
            ),
        ),
        "no __metadata__": lambda b: st.with_header(b, lambda h: h.pop("__metadata__")),
        "no headcount key": _meta({"other": "1"}),
        "metadata value not a string": _meta({"headcount": {"format": "x"}}),
        "headcount not JSON": lambda b: st.with_config_text(b, "{not json"),
        "headcount a JSON array": lambda b: st.with_config_text(b, "[1, 2]"),
        "headcount null": lambda b: st.with_config_text(b, "null"),
        "headcount a number": lambda b: st.with_config_text(b, "1e999"),
        "headcount 100k-deep": lambda b: st.with_config_text(b, st.deep_list()),
        "headcount 5000-digit number": lambda b: st.with_config_text(b, st.BIG),
        "headcount 20 MB": _set(["info"], "x" * 20_000_000),
        "format unknown": _set(["format"], "headcount-other"),
        "format missing": _drop("format"),
        "format a list": _set(["format"], ["headcount-transformer"]),
        "version missing": _drop("version"),
        "version 0": _set(["version"], 0),
        "version 2": _set(["version"], 2),
        "version '1'": _set(["version"], "1"),
        "version 1.5": _set(["version"], 1.5),
        "version true": _set(["version"], True),
        "version 5000 digits": _set(["version"], None, st.BIG),
        "version 1e999": _set(["version"], None, "1e999"),
        "version NaN": _set(["version"], None, "NaN"),
        "info 'abc'": _set(["info"], "abc"),
        "info a list": _set(["info"], [1, 2]),
        "info 100k-deep list": _set(["info"], None, st.deep_list()),
        "info 100k-deep object": _set(["info"], None, st.deep_dict()),
        "info 5000-digit number": _set(["info"], None, '{"n": ' + st.BIG + "}"),
        "info Infinity": _set(["info"], None, '{"n": Infinity}'),
        "all weights NaN": _all_tensors(
            lambda a: np.full_like(a, np.nan) if a.dtype.kind == "f" else a
        ),
        "all weights +inf": _all_tensors(
            lambda a: np.full_like(a, np.inf) if a.dtype.kind == "f" else a
        ),
        "weights 1e308": _all_tensors(
            lambda a: np.full_like(a, 1e308) if a.dtype.kind == "f" else a
        ),
        "weights float32": _all_tensors(
            lambda a: a.astype(np.float32) if a.dtype.kind == "f" else a
        ),
        "weights int64": _all_tensors(lambda a: a.astype(np.int64)),
        "weights gzip-compressed file": lambda b: gzip.compress(b),
    }
    return v


def _other_formats(blobs: dict[str, bytes], kind: str) -> dict[str, Variant]:
    """The file of another kind given to this kind's command, and its format string on this
    content."""
    out: dict[str, Variant] = {}
    for other, blob in blobs.items():
        if other != kind:
            out[f"a {other} file"] = lambda b, blob=blob: blob
            fmt = st.config_of(blob)["format"]
            out[f"format says {other}"] = _set(["format"], fmt)
    return out


def _tensors(change) -> Variant:
    return lambda blob: st.with_tensors(blob, change)


def _heads(count: int) -> Variant:
    """A transformer whose first layer has `count` heads (valid shapes: zero heads of width 1)."""
    import numpy as np

    def change_tensors(t):
        d = t["W_E"].shape[1]
        for h in range(count):
            for name, shape in (("W_Q", (d, 1)), ("W_K", (d, 1)), ("W_V", (d, 1)), ("W_O", (1, d))):
                t[f"layers.0.heads.{h}.{name}"] = np.zeros(shape)

    def variant(blob: bytes) -> bytes:
        blob = st.with_tensors(blob, change_tensors)
        return st.with_config(blob, lambda c: c["layers"][0].__setitem__("heads", count))

    return variant


def _transformer() -> dict[str, Variant]:
    import numpy as np

    v: dict[str, Variant] = {}
    for lab, value, raw in (
        ("5000 digits", None, st.BIG),
        ("1e999", None, "1e999"),
        ("Infinity", None, "Infinity"),
        ("NaN", None, "NaN"),
        ("-1", -1, None),
        ("10^9", 10**9, None),
        ("80,000", 80_000, None),
        ("'abc'", "abc", None),
        ("1.5", 1.5, None),
        ("null", None, "null"),
        ("a list", [], None),
    ):
        v[f"layer heads {lab}"] = _set(["layers", 0, "heads"], value, raw)
    v |= {
        "layers []": _set(["layers"], []),
        "layers an object": _set(["layers"], {}),
        "layers 1000 entries": _set(["layers"], [{"heads": 1, "mlp": False}] * 1000),
        "layers 100k-deep": _set(["layers"], None, st.deep_list()),
        "layers a string": _set(["layers"], "x" * 5000),
        "mlp without tensors": _set(["layers", 0, "mlp"], True),
        "mask bogus": _set(["mask"], "bogus"),
        "mask null": _set(["mask"], None),
        "mask 5000 chars": _set(["mask"], "m" * 5000),
        "decoder missing": _drop("decoder"),
        "decoder a string": _set(["decoder"], "linear"),
        "decoder config 100k-deep": _set(["decoder", "config"], None, st.deep_dict()),
        "decoder config 5000 digits": _set(
            ["decoder", "config"], None, '{"n_ctx": ' + st.BIG + "}"
        ),
        "W_U one column short": _tensors(
            lambda t: t.update({"decoder.W_U": t["decoder.W_U"][:, :-1]})
        ),
        "W_U transposed": _tensors(lambda t: t.update({"decoder.W_U": t["decoder.W_U"].T.copy()})),
        "b_U too long": _tensors(lambda t: t.update({"decoder.b_U": np.zeros(99)})),
        "W_E one column more": _tensors(
            lambda t: t.update({"W_E": np.zeros((t["W_E"].shape[0], t["W_E"].shape[1] + 1))})
        ),
        "W_E 1-D": _tensors(lambda t: t.update({"W_E": t["W_E"].ravel().copy()})),
        "W_E 0 rows": _tensors(lambda t: t.update({"W_E": np.zeros((0, t["W_E"].shape[1]))})),
        "W_E 3-D": _tensors(lambda t: t.update({"W_E": t["W_E"][None].copy()})),
        "W_pos 1 row": _tensors(lambda t: t.update({"W_pos": t["W_pos"][:1].copy()})),
        "W_pos 0 rows": _tensors(lambda t: t.update({"W_pos": t["W_pos"][:0].copy()})),
        "W_pos missing": _tensors(lambda t: t.pop("W_pos")),
        "W_Q one row short": _tensors(
            lambda t: t.update({"layers.0.heads.0.W_Q": t["layers.0.heads.0.W_Q"][:-1].copy()})
        ),
        "W_O one column short": _tensors(
            lambda t: t.update({"layers.0.heads.0.W_O": t["layers.0.heads.0.W_O"][:, :-1].copy()})
        ),
        "W_V and W_O disagree": _tensors(
            lambda t: t.update({"layers.0.heads.0.W_V": np.zeros((t["W_E"].shape[1], 7))})
        ),
        "an unknown extra tensor": _tensors(lambda t: t.update({"extra": np.zeros(3)})),
        "5000 heads": _heads(5000),
    }
    return v | _gpt2_parts()


def _gpt2_parts() -> dict[str, Variant]:
    """The GPT-2 keys of a weight-form config (issue 14) and the "vocab" decoder, lying or
    hostile."""
    v: dict[str, Variant] = {}
    for lab, value, raw in (
        ("eps 0", {"eps": 0}, None),
        ("eps -1", {"eps": -1}, None),
        ("eps NaN", None, '{"eps": NaN}'),
        ("eps 1e999", None, '{"eps": 1e999}'),
        ("eps a string", {"eps": "x"}, None),
        ("a bare number", 1e-5, None),
        ("100k-deep", None, st.deep_dict()),
    ):
        v[f"ln1 {lab}"] = _set(["layers", 0, "ln1"], value, raw)
        v[f"ln_final {lab}"] = _set(["ln_final"], value, raw)
    v |= {
        "ln1 without tensors": _set(["layers", 0, "ln1"], {"eps": 1e-5}),
        "ln2 without an MLP": _set(["layers", 0, "ln2"], {"eps": 1e-5}),
        "ln_final without tensors": _set(["ln_final"], {"eps": 1e-5}),
        "head_biases without tensors": _set(["layers", 0, "head_biases"], True),
        "head_biases a string": _set(["layers", 0, "head_biases"], "yes"),
        "b_O without a tensor": _set(["layers", 0, "b_O"], True),
        "activation bogus": _set(["layers", 0, "activation"], "swish"),
        "activation gelu without an MLP": _set(["layers", 0, "activation"], "gelu"),
        "attn_scale Infinity": _set(["layers", 0, "attn_scale"], None, "Infinity"),
        "attn_scale 5000 digits": _set(["layers", 0, "attn_scale"], None, st.BIG),
        "attn_scale a list": _set(["layers", 0, "attn_scale"], [1]),
        "decoder vocab readout bogus": _set(
            ["decoder"], {"kind": "vocab", "config": {"readout": "bogus"}}
        ),
        "decoder vocab hidden": _set(
            ["decoder"], {"kind": "vocab", "config": {"readout": "hidden"}}
        ),
        "decoder vocab map 100k-deep": _set(
            ["decoder"], None, '{"kind": "vocab", "config": {"vocab_map": ' + st.deep_dict() + "}}"
        ),
        "decoder vocab map huge ids": _set(
            ["decoder"],
            {"kind": "vocab", "config": {"readout": "tied", "vocab_map": {"symbols": [2**40]}}},
        ),
        "decoder vocab map repeated ids": _set(
            ["decoder"],
            {"kind": "vocab", "config": {"readout": "tied", "vocab_map": {"symbols": [0, 0]}}},
        ),
        # issue 35: "hops" as {"k": id}, or a list only with "hops_from" 0 | 1
        **{
            f"decoder vocab map hops {what}": _set(
                ["decoder"], {"kind": "vocab", "config": {"readout": "tied", "vocab_map": vmap}}
            )
            for what, vmap in {
                "a bare list": {"hops": [1, 2]},
                "from a string": {"hops": [1], "hops_from": "0"},
                "from 2": {"hops": [1], "hops_from": 2},
                "from without hops": {"hops_from": 0},
                "object key 01": {"hops": {"01": 1}},
                "object id a list": {"hops": {"0": [1]}},
                "object 100k keys": {"hops": {str(k): k for k in range(100_000)}},
            }.items()
        },
    }
    return v


def _table() -> dict[str, Variant]:
    import numpy as np

    return {
        "Q one position short": _tensors(lambda t: t.update({"Q": t["Q"][:, :-1].copy()})),
        "V 1-D": _tensors(lambda t: t.update({"V": t["V"].ravel().copy()})),
        "embed transposed": _tensors(lambda t: t.update({"embed": t["embed"].T.copy()})),
        "embed missing": _tensors(lambda t: t.pop("embed")),
        "K 5 heads, Q 1": _tensors(lambda t: t.update({"K": np.zeros((5, *t["K"].shape[1:]))})),
        "readout n_ctx 10^9": _set(["decoder", "config", "n_ctx"], 10**9),
        "readout n_ctx 5000 digits": _set(["decoder", "config", "n_ctx"], None, st.BIG),
        "readout n_ctx -1": _set(["decoder", "config", "n_ctx"], -1),
        "readout n_ctx 'abc'": _set(["decoder", "config", "n_ctx"], "abc"),
        "readout n_ctx missing": _set(["decoder", "config"], {}),
        "decoder linear without W_U": _set(["decoder"], {"kind": "linear", "config": {}}),
        "mask bogus": _set(["mask"], "bogus"),
        "mask full": _set(["mask"], "full"),
    }


def _decoder_kinds() -> dict[str, Variant]:
    """Decoder kinds that are not registered, including importable modules (some run code on
    import)."""
    kinds = [
        "os",
        "subprocess",
        "this",
        "builtins",
        "headcount.core.model.files",
        "headcount.induction.readout",
        "",
    ]
    kinds += ["../x", "linear ", "x" * 5000, "__import__", "os:system"]
    v = {f"decoder kind {kind[:20]!r}": _set(["decoder", "kind"], kind) for kind in kinds}
    v |= {
        "decoder kind null": _set(["decoder", "kind"], None),
        "decoder kind a list": _set(["decoder", "kind"], ["linear"]),
    }
    return v


def _minmax() -> dict[str, Variant]:
    import numpy as np

    v: dict[str, Variant] = {}
    for key in ("M", "dim", "heads"):
        for lab, value, raw in (
            ("10^12", 10**12, None),
            ("5000 digits", None, st.BIG),
            ("-1", -1, None),
            ("0", 0, None),
            ("'x'", "x", None),
            ("1e999", None, "1e999"),
            ("NaN", None, "NaN"),
        ):
            v[f"{key} {lab}"] = _set([key], value, raw)
    v |= {
        "heads 2 (tensors for 1)": _set(["heads"], 2),
        "scores NaN": _tensors(
            lambda t: t.update({"heads.0.scores": np.full_like(t["heads.0.scores"], np.nan)})
        ),
        "values +inf": _tensors(
            lambda t: t.update({"heads.0.values": np.full_like(t["heads.0.values"], np.inf)})
        ),
        "theta wrong shape": _tensors(
            lambda t: t.update({"classifier_min.theta": np.zeros((3, 2))})
        ),
        "scores 2-D": _tensors(lambda t: t.update({"heads.0.scores": np.zeros((4, 4))})),
        "values 0 columns": _tensors(lambda t: t.update({"heads.0.values": np.zeros((4, 0))})),
        "scores missing": _tensors(lambda t: t.pop("heads.0.scores")),
    }
    return v


RATIONALS = [
    "1e10000000",
    "1e-100000000",
    "1/0",
    "0/0",
    "nan",
    "inf",
    "-inf",
    "",
    "1/",
    "/2",
    "0x1p3",
    "½",
]
VALID_RATIONALS = [
    "1_0",
    " 1",
    "١",
    "1" + "0" * 1_000_000,
    "1/" + "9" * 1_000_000,
    "9" * 5000 + "/7",
    "1e5",
    "-0",
]


def short(text: str) -> str:
    return f"{text[:16]!r}{'…' if len(text) > 16 else ''}"


def _boolean() -> dict[str, Variant]:
    v: dict[str, Variant] = {}
    for text in RATIONALS + VALID_RATIONALS:
        v[f"w0 = {short(text)}"] = _set(["layer", 0, "w0"], text)
    for text in ("1e10000000", "1/0", "1" + "0" * 1_000_000):
        v[f"v0[0] = {short(text)}"] = _set(["layer", 0, "v0", 0], text)
        v[f"readout coefficient {short(text)}"] = _set(["readout", 0, 1], text)
    for lab, value, raw in (
        ("1.5", 1.5, None),
        ("true", True, None),
        ("null", None, "null"),
        ("a list", [], None),
        ("1e999", None, "1e999"),
        ("5000-digit number", None, st.BIG),
    ):
        v[f"w0 JSON {lab}"] = _set(["layer", 0, "w0"], value, raw)
    for key in ("degree", "dim", "heads"):
        for lab, value, raw in (
            ("10^9", 10**9, None),
            ("-1", -1, None),
            ("0", 0, None),
            ("'2'", "2", None),
        ):
            v[f"{key} {lab}"] = _set([key], value, raw)
        v[f"{key} 5000 digits"] = _set([key], None, st.BIG)
        v[f"{key} 1e999"] = _set([key], None, "1e999")
    head = {"w0": "0", "w1": "0", "v0": ["0", "0"], "v1": ["0", "0"]}
    v |= {
        "v0 longer than dim": _set(["layer", 0, "v0"], ["1", "1", "1"]),
        "v0 empty": _set(["layer", 0, "v0"], []),
        "v0 a string": _set(["layer", 0, "v0"], "12"),
        "layer 100k-deep": _set(["layer"], None, st.deep_list()),
        "layer an object": _set(["layer"], {}),
        "80,000 heads": lambda b: st.with_config(
            b,
            lambda c: c.update(
                {"layer": c["layer"] + [head] * (80_000 - len(c["layer"])), "heads": 80_000}
            ),
        ),
        "exponent 10^9": _set(["readout", 0, 0], [10**9, 0]),
        "exponent -1": _set(["readout", 0, 0], [-1, 1]),
        "exponent wrong length": _set(["readout", 0, 0], [1, 1, 1]),
        "exponent 5000 digits": _set(["readout", 0, 0], None, f"[{st.BIG}, 1]"),
        "readout 100,000 terms": _set(["readout"], [[[1, 1], "1"]] * 100_000),
        "readout an object": _set(["readout"], {}),
        "readout 100k-deep": _set(["readout"], None, st.deep_list()),
        "info n 10^9": _set(["info", "n"], 10**9),
        "info n -1": _set(["info", "n"], -1),
        "info n 'abc'": _set(["info", "n"], "abc"),
        "info n 5000 digits": _set(["info", "n"], None, st.BIG),
        "info n 1e999": _set(["info", "n"], None, "1e999"),
        "info function 'majority'": _set(["info", "function"], "majority"),
    }
    return v


def variants(blobs: dict[str, bytes], kind: str) -> dict[str, Variant]:
    """Every byte-level variant of `kind`'s base file (`blobs`: the valid file of every kind)."""
    v = _generic() | _other_formats(blobs, kind)
    if kind in ("transformer", "table"):
        v |= _decoder_kinds() | (_transformer() if kind == "transformer" else _table())
    if kind == "minmax":
        v |= _minmax()
    if kind == "boolean":
        v |= _boolean()
    return v
