"""What `headcount induction construct` and the construction sources ask for in the k-hop family:
the depth by name (:data:`DEPTHS`: "ceil", the pointer-doubling construction of construction.py in
⌈log₂ k⌉ + 2 layers at constant width; "floor", floor.py's in ⌊log₂ k⌋ + 2 layers with one layer-1
head per binary level of the position), the checks of `construct`'s parameters together
(:func:`construction_request`), and the file it writes (:func:`write_requested_construction`).
"""

from __future__ import annotations

import dataclasses
import os

from headcount.common.errors import InputError, param
from headcount.common.resources import check_memory
from headcount.core.model import Transformer
from headcount.induction.construction import (
    ConstructionFile,
    ModelShape,
    save_construction,
    write_construction,
)
from headcount.induction.layouts import check_layout
from headcount.induction.multihop.construction import (
    BYTES_PER_POSITION_EXTRA,
    KHOP_DIM,
    check_khop_sizes,
    khop_construction,
    khop_layers,
    khop_shape,
    variable_hop_construction,
)
from headcount.induction.multihop.floor import floor_construction, floor_layers, floor_shape

DEPTHS = ("ceil", "floor")


def check_depth_name(depth: str | None) -> str:
    """The depth's name ("ceil" when None); InputError for any other."""
    name = "ceil" if depth is None else str(depth).strip().lower()
    if name not in DEPTHS:
        raise InputError(
            f"{param('depth')} {depth!r}: give ceil (⌈log₂ k⌉ + 2 layers, width {KHOP_DIM}) or "
            "floor (⌊log₂ k⌋ + 2 layers, one layer-1 head per binary level of the position)"
        )
    return name


def hop_layers(hops: int, depth: str = "ceil") -> int:
    """The layers of the k-hop construction of this depth for k = hops."""
    return floor_layers(hops) if depth == "floor" else khop_layers(hops)


def hop_shape(n: int, hops: int, depth: str = "ceil") -> ModelShape:
    """Its shape (heads per layer, d_model) at length n, before it is built."""
    return floor_shape(n, hops) if depth == "floor" else khop_shape(hops)


def hop_construction(n: int, alphabet: int, hops: int, depth: str = "ceil") -> Transformer:
    """The k-hop construction of this depth on Σ^n, plain layout."""
    if depth == "floor":
        return floor_construction(n, alphabet, hops)
    return khop_construction(n, alphabet, hops)


def khop_construction_bytes(
    n: int, alphabet: int, layers: int, hop_tokens: int = 0, d_model: int | None = None
) -> float:
    """Memory a k-hop construction takes while it is built (bytes, a float: any size is safe);
    d_model the ceil construction's unless given."""
    d = float(d_model or KHOP_DIM + (layers - 2 if hop_tokens else 0))
    positions = float(n) + (1.0 if hop_tokens else 0.0)
    vocab = float(alphabet) + float(hop_tokens)
    heads = 8.0 * layers * 6 * d * d  # W_Q, W_K, W_V, W_O and the MLPs, generously
    return (
        (8 * d + BYTES_PER_POSITION_EXTRA) * positions
        + 8 * d * (vocab + float(alphabet) + 1)
        + heads
    )


@dataclasses.dataclass(frozen=True)
class KHopRequest:
    """What `construct` asked for, after its checks: `kind` "layers"
    (construction.write_construction), "khop" (fixed k) or "variable" (hop-prefix, every k ≤
    max_hops), with the depth's name for "khop"."""

    kind: str
    layers: int
    hops: int | None = None
    max_hops: int | None = None
    depth: str = "ceil"


def construction_request(
    layers: int | None,
    hops: int | None,
    layout: str,
    max_hops: int | None,
    n: int,
    alphabet: int,
    depth: str | None = None,
) -> KHopRequest:
    """Check the parameters of `construct` together; InputError names the parameter and what is
    allowed. `depth` (None: ceil) names the k-hop construction, for a fixed k in the plain layout
    only."""
    layout = check_layout(layout)
    hops_, layout_, max_hops_ = param("hops"), param("layout"), param("max_hops")
    name = check_depth_name(depth)
    if depth is not None and (layout != "plain" or hops is None):
        raise InputError(
            f"{param('depth')} names the construction for {hops_} k with {layout_} plain "
            "(a hop-prefix model and the 1- and 2-layer constructions have one depth)"
        )
    if layout == "hop-prefix":
        if hops is not None:
            raise InputError(
                f"{hops_} is for {layout_} plain: a hop-prefix model answers each k ≤ {max_hops_} K"
            )
        if max_hops is None:
            raise InputError(
                f"{layout_} hop-prefix needs {max_hops_} K (the model answers every k ≤ K)"
            )
        K = check_khop_sizes(n, alphabet, max_hops, "max_hops")
        return KHopRequest(
            "variable", check_depth(layers, khop_layers(K), f"{max_hops_} {K}"), max_hops=K
        )
    if max_hops is not None:
        raise InputError(
            f"{max_hops_} is for {layout_} hop-prefix: with {layout_} plain give {hops_} k"
        )
    if hops is None:
        if layers is None:
            raise InputError(
                f"give {param('layers')} {{1,2}} or {hops_} k (or {layout_} hop-prefix "
                f"{max_hops_} K)"
            )
        return KHopRequest("layers", layers)
    k = check_khop_sizes(n, alphabet, hops, "hops")
    if k == 1 and name == "ceil" and layers in (None, 1, 2):  # hop 1 is induction heads
        return KHopRequest("layers", 2 if layers is None else layers)
    what = f"{hops_} {k}" + ("" if name == "ceil" else f" {param('depth')} floor")
    return KHopRequest("khop", check_depth(layers, hop_layers(k, name), what), hops=k, depth=name)


def check_depth(layers: int | None, depth: int, what: str) -> int:
    """`depth` unless `layers` is given and differs (InputError: `layers` does not fit `what`)."""
    if layers is not None and layers != depth:
        raise InputError(
            f"{param('layers')} {layers} does not fit {what}: its construction has {depth} layers"
        )
    return depth


def write_requested_construction(
    out: str | os.PathLike,
    n: int,
    alphabet: int,
    layers: int | None = None,
    hops: int | None = None,
    layout: str = "plain",
    max_hops: int | None = None,
    depth: str | None = None,
) -> ConstructionFile:
    """`headcount induction construct`: the requested construction (construction_request) written to
    `out`, after the memory guard (two copies: safetensors serialises one)."""
    request = construction_request(layers, hops, layout, max_hops, n, alphabet, depth)
    if request.kind == "layers":  # today's 1- and 2-layer files; hops = 1 is said in the result
        written = write_construction(request.layers, n, alphabet, out)
        return written if hops is None else dataclasses.replace(written, hops=1)
    tokens = request.max_hops or 0
    width = hop_shape(n, request.hops, request.depth).d_model if request.kind == "khop" else None
    check_memory(
        2 * khop_construction_bytes(n, alphabet, request.layers, tokens, width),
        f"the {request.layers}-layer k-hop construction at {param('n')} {n} {param('alphabet')} "
        f"{alphabet}",
    )
    if request.kind == "variable":
        model = variable_hop_construction(n, alphabet, request.max_hops)
        return save_construction(
            model, n, alphabet, out, layout="hop-prefix", max_hops=request.max_hops
        )
    model = hop_construction(n, alphabet, request.hops, request.depth)
    return save_construction(model, n, alphabet, out, hops=request.hops, depth=request.depth)
