"""Where an induction command's model comes from: :class:`ModelSource`.

A source is exactly one of

* a model file (`model_file`): any model headcount reads (core.model.load_model), its shape known
  once read;
* a construction (`layers`): 1 or 2 (induction heads), or "auto" / the k-hop construction's depth
  for the task's hop count k, at the task's (n, alphabet); `depth` names which (multihop/request.py:
  "ceil", ⌈log₂ k⌉ + 2 layers, the default; "floor", ⌊log₂ k⌋ + 2);
* a seeded random one-layer table model (`random_seed`, with `heads` and `dim`): the lower-bound
  commands' (INDEX protocol and refute), over the tokens 0, 1, ? at length 2k+1.

The commands that run the task (certify, predict) take a model file or a construction: `check(n,
alphabet, hops, layout)` checks that the choice is coherent and the construction exists for those
sizes, and returns its shape before anything is built (the construction's own:
construction.construction_shape, multihop.request.hop_shape); `load(…)` reads or builds it.
The INDEX commands take a one-layer model file or a random model:
`lower_bound.setup.load_index_model(source, k)`. Options that only describe another kind of source
are refused, not ignored. Messages name the parameters (common.errors.param), as the command line
spells them as its flags.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from headcount.common.errors import InputError, param
from headcount.core.certify import Model
from headcount.induction.construction import (
    ModelShape,
    build_construction,
    check_sizes,
    construction_shape,
    load_model_file,
)
from headcount.induction.multihop.construction import check_khop_sizes
from headcount.induction.multihop.request import (
    check_depth,
    check_depth_name,
    hop_construction,
    hop_layers,
    hop_shape,
)


@dataclass(frozen=True)
class ModelSource:
    """Where a model comes from (module docstring): `model_file`, or `layers` (a construction), or
    `random_seed` with `heads` and `dim` (a random one-layer table model, for the INDEX
    commands); `depth` (None: ceil) names the k-hop construction."""

    model_file: str | os.PathLike | None = None
    layers: int | str | None = None
    random_seed: int | None = None
    heads: int | None = None
    dim: int | None = None
    depth: str | None = None

    @property
    def from_file(self) -> bool:
        """Whether the model is read from a file (its info's labels are then labels, never
        facts)."""
        return self.model_file is not None

    # --- the commands that run the task: a model file or a construction -------------------------

    def construction_layers(self, hops: int = 1, layout: str = "plain") -> int | None:
        """The depth of the construction asked for (None: no construction). "auto" is the
        construction for `hops` = k (2 layers for k = 1, ⌈log₂ k⌉ + 2 from the k-hop construction);
        an integer with k ≥ 2 must be that depth; the hop-prefix layout has no construction here (it
        is written by `headcount induction construct` and read from its file)."""
        layers = self.layers
        if layers is None:
            return None
        if isinstance(layers, str) and layers.strip().lower() != "auto":
            try:
                layers = int(layers)
            except ValueError:
                raise InputError(
                    f"{param('layers')} {layers!r}: give 1, 2 or auto (the construction for "
                    f"{param('hops')} k)"
                ) from None
        elif isinstance(layers, str):
            layers = "auto"
        depth = check_depth_name(self.depth)
        if layers != "auto" and hops == 1 and depth == "ceil":
            return layers
        if layout != "plain":
            raise InputError(
                "a hop-prefix construction answers every k ≤ K: write it with `induction construct "
                f"{param('layout')} hop-prefix {param('max_hops')} K {param('out')} FILE` and "
                "certify it "
                f"with {param('model')} FILE"
            )
        what = f"{param('hops')} {hops}" + ("" if depth == "ceil" else f" {param('depth')} floor")
        return check_depth(None if layers == "auto" else layers, hop_layers(hops, depth), what)

    def shape(
        self, n: int | None = None, hops: int = 1, layout: str = "plain"
    ) -> ModelShape | None:
        """The shape (heads per layer, d_model) of what `load` (a construction at length n for
        `hops`) or `load_index` (a random model) will produce, before producing it; None for a model
        file (its shape is known once it is read) or a source that names none."""
        if self.model_file is not None:
            return None
        if self.random_seed is not None:
            return (
                None
                if self.heads is None or self.dim is None
                else ModelShape((self.heads,), self.dim)
            )
        layers = self.construction_layers(hops, layout)
        if layers is None:
            return None
        if self._hop_model(hops):
            return hop_shape(n, hops, check_depth_name(self.depth))
        return construction_shape(layers, n)

    def _hop_model(self, hops: int) -> bool:
        """Whether the construction is a k-hop one (k ≥ 2, or any k at depth floor)."""
        return hops >= 2 or check_depth_name(self.depth) == "floor"

    def check(
        self, n: int | None, alphabet: int | None, hops: int = 1, layout: str = "plain"
    ) -> ModelShape | None:
        """InputError unless exactly one of a model file or a construction is named, and a
        construction exists at (n, alphabet) for `hops`; the construction's shape (None for a model
        file)."""
        layers = self.construction_layers(hops, layout)
        if self.random_seed is not None or self.heads is not None or self.dim is not None:
            raise InputError(
                f"{param('random_seed')}, {param('heads')} and {param('dim')} describe a random "
                "INDEX model "
                "(the protocol and refute commands): this command runs a model file or a "
                "construction"
            )
        if self.model_file is not None and self.depth is not None:
            raise InputError(
                f"{param('depth')} names a construction: with {param('model')} FILE the file's "
                "model is used"
            )
        if (self.model_file is None) == (layers is None):
            raise InputError(
                f"give exactly one of {param('model')} FILE or {param('layers')} {{1,2}} "
                f"(with {param('n')} and {param('alphabet')})"
            )
        if layers is None:
            return None
        if n is None or alphabet is None:
            raise InputError(f"{param('layers')} needs {param('n')} N and {param('alphabet')} S")
        if self._hop_model(hops):
            check_khop_sizes(n, alphabet, hops)
        else:
            check_sizes(n, alphabet, layers)
        return self.shape(n, hops, layout)

    def load(
        self,
        n: int | None = None,
        alphabet: int | None = None,
        hops: int = 1,
        layout: str = "plain",
    ) -> Model:
        """The model: the file read (a bad or missing file is a ModelFileError, an InputError), or
        the construction built at (n, alphabet) for `hops` (after check and, for 1 and 2 layers, the
        memory guard)."""
        self.check(n, alphabet, hops, layout)
        if self.model_file is not None:
            return load_model_file(self.model_file)
        if self._hop_model(hops):
            return hop_construction(n, alphabet, hops, check_depth_name(self.depth))
        return build_construction(self.construction_layers(hops, layout), n, alphabet)
