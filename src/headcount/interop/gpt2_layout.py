"""Which tensors a GPT-2 checkpoint holds (issue 14), for the importer headcount.interop.gpt2 (whose
docstring draws the layout): `gpt2_layout` finds the key prefix and the layers and refuses missing,
unexpected and cross-attention tensors; `gpt2_sizes` reads the sizes off the shapes and checks every
tensor's shape and dtype against them. Both see the checkpoint's listing only (name → shape, dtype),
before any tensor is loaded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from headcount.common.errors import InputError, param
from headcount.core.model.files import MAX_LAYERS

WEIGHT_DTYPES = ("F64", "F32", "F16", "BF16")
LAYER_PARTS = tuple(
    f"{module}.{kind}"
    for module in ("ln_1", "attn.c_attn", "attn.c_proj", "ln_2", "mlp.c_fc", "mlp.c_proj")
    for kind in ("weight", "bias")
)
D_MODEL_VECTORS = (
    "ln_1.weight",
    "ln_1.bias",
    "ln_2.weight",
    "ln_2.bias",
    "attn.c_proj.bias",
    "mlp.c_proj.bias",
)
TOP_PARTS = ("wte.weight", "wpe.weight", "ln_f.weight", "ln_f.bias")
MASK_BUFFERS = ("attn.bias", "attn.masked_bias")  # causal-mask buffers of transformers < 4.27
CROSS_ATTENTION = ("crossattention.", "ln_cross_attn.")
_LAYER_KEY = re.compile(r"h\.(0|[1-9][0-9]{0,8})\.(.+)", re.S)


def _listed(names: list[str], limit: int = 4) -> str:
    shown = ", ".join(repr(n[:100]) for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


@dataclass(frozen=True)
class Layout:
    """Where a checkpoint's tensors are: the key prefix, the layer count, the lm_head key (None:
    none), and the mask buffers skipped."""

    prefix: str
    layers: int
    lm_head: str | None
    ignored: tuple[str, ...]

    def key(self, part: str, layer: int | None = None) -> str:
        return self.prefix + (part if layer is None else f"h.{layer}.{part}")

    def weights(self) -> list[str]:
        names = [self.key(p) for p in TOP_PARTS]
        names += [self.key(p, l) for l in range(self.layers) for p in LAYER_PARTS]
        return names + ([self.lm_head] if self.lm_head else [])


def find_prefix(names: list[str], where: str) -> str:
    """The prefix before "wte.weight" (InputError when none or several)."""
    found = sorted(
        {n[:-10] for n in names if n.endswith("wte.weight") and n[:-10] in ("", n[:-11] + ".")}
    )
    if len(found) == 1:
        return found[0]
    if not found:
        raise InputError(
            f"{where} has no token embedding 'wte.weight' among its {len(names)} tensors "
            f"({_listed(sorted(names), 3)}): not a GPT-2 checkpoint, or give {param('prefix')}"
        )
    raise InputError(
        f"{where}: several tensors end in wte.weight (prefixes {_listed(found)}); choose one with "
        f"{param('prefix')}"
    )


def gpt2_layout(names: list[str], prefix: str | None, where: str) -> Layout:
    """The checked layout of a checkpoint holding tensors `names` (interop.gpt2's docstring):
    InputError naming cross-attention, missing and unexpected tensors."""
    prefix = find_prefix(names, where) if prefix is None else prefix
    if prefix + "wte.weight" not in names:
        raise InputError(
            f"{where} has no tensor {prefix + 'wte.weight'!r}: {param('prefix')} {prefix!r} does "
            "not match"
        )
    outer = prefix[: -len("transformer.")] if prefix.endswith("transformer.") else prefix
    lm_key = outer + "lm_head.weight"
    layers, buffers, unexpected = _sort_names(names, prefix, lm_key, where)
    count = max(layers, default=-1) + 1
    if count > MAX_LAYERS:
        raise InputError(
            f"{where} has {count:,} layers; headcount model files hold at most {MAX_LAYERS}"
        )
    unexpected += [name for l, name in buffers if l >= count]
    layout = Layout(
        prefix,
        count,
        lm_key if lm_key in names else None,
        tuple(n for l, n in sorted(buffers) if l < count),
    )
    listed = set(names)
    if missing := [n for n in layout.weights() if n not in listed]:
        raise InputError(
            f"{where} lacks {len(missing)} tensor(s) of a GPT-2 model: {_listed(missing)}"
        )
    if unexpected:
        raise InputError(
            f"{where} holds {len(unexpected)} tensor(s) that are not part of a GPT-2 model "
            "(GPT2Model / "
            f"GPT2LMHeadModel, prefix {prefix!r}): {_listed(sorted(unexpected))}"
        )
    return layout


def _sort_names(names: list[str], prefix: str, lm_key: str, where: str) -> tuple[set, list, list]:
    """(the layers whose parts are named, the mask buffers as (layer, name), the names that are no
    part of a GPT-2 model) of a checkpoint's tensors under `prefix`; InputError naming
    cross-attention tensors."""
    layers, buffers, unexpected, cross = set(), [], [], []
    for name in names:
        rest = name[len(prefix) :] if name.startswith(prefix) else None
        match = None if rest is None else _LAYER_KEY.fullmatch(rest)
        if name == lm_key or rest in TOP_PARTS:
            continue
        if match is None:
            unexpected.append(name)
        elif match[2].startswith(CROSS_ATTENTION):
            cross.append(name)
        elif match[2] in MASK_BUFFERS:
            buffers.append((int(match[1]), name))
        elif match[2] in LAYER_PARTS:
            layers.add(int(match[1]))
        else:
            unexpected.append(name)
    if cross:
        raise InputError(
            f"{where}: cross-attention is not supported (tensors {_listed(sorted(cross), 2)})"
        )
    return layers, buffers, unexpected


@dataclass(frozen=True)
class Sizes:
    vocab: int
    d_model: int
    n_ctx: int
    d_mlp: int | None  # None without layers


def gpt2_sizes(listed: dict, layout: Layout, where: str) -> Sizes:
    """The sizes the shapes say, every tensor checked against them (shape and dtype)."""

    def shape(name: str, want: tuple, meaning: str) -> tuple[int, ...]:
        got, dtype = listed[name]
        if (
            len(got) != len(want)
            or any(w is not None and w != g for w, g in zip(want, got))
            or 0 in got
        ):
            shown = [("*" if w is None else w) for w in want]
            raise InputError(
                f"{where}: tensor {name!r} has shape {list(got)}, expected {shown} = {meaning}"
            )
        if dtype not in WEIGHT_DTYPES:
            raise InputError(
                f"{where}: tensor {name!r} has dtype {dtype}; weights are "
                f"{', '.join(WEIGHT_DTYPES)}"
            )
        return got

    vocab, d = shape(layout.key("wte.weight"), (None, None), "[vocab d_model]")
    n_ctx = shape(layout.key("wpe.weight"), (None, d), "[n_ctx d_model]")[0]
    d_mlp = None
    for l in range(layout.layers):
        for part in D_MODEL_VECTORS:
            shape(layout.key(part, l), (d,), "[d_model]")
        shape(
            layout.key("attn.c_attn.weight", l),
            (d, 3 * d),
            "[d_model 3·d_model] (Conv1D: x W, q | k | v)",
        )
        shape(layout.key("attn.c_attn.bias", l), (3 * d,), "[3·d_model]")
        shape(layout.key("attn.c_proj.weight", l), (d, d), "[d_model d_model]")
        d_mlp = shape(
            layout.key("mlp.c_fc.weight", l), (d, d_mlp), "[d_model d_mlp] (Conv1D: x W)"
        )[1]
        shape(layout.key("mlp.c_fc.bias", l), (d_mlp,), "[d_mlp]")
        shape(layout.key("mlp.c_proj.weight", l), (d_mlp, d), "[d_mlp d_model] (Conv1D: x W)")
    for part in ("ln_f.weight", "ln_f.bias"):
        shape(layout.key(part), (d,), "[d_model]")
    if layout.lm_head:
        shape(layout.lm_head, (vocab, d), "[vocab d_model] (nn.Linear: x Wᵀ)")
    return Sizes(vocab, d, n_ctx, d_mlp)
