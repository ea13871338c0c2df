"""Ground-truth models for interpretability-method benchmarks (issue 15, point 5): `headcount zoo`.

The zoo is the constructions as ready models, each with a machine-readable description of what every
head was built to do. ``ENTRIES`` is the one table: a name, a one-line description, the task and its
sizes, and a ``Kind`` that builds the model (the scenario's own construction function), describes
its roles (the construction module's roles function: induction/roles.py,
minmax/construction.two_head_roles, boolean/construction.construction_roles), certifies it, and
writes it.

``export(name, format, out)`` writes into the folder `out` (created if missing):

* format ``headcount``: ``<name>.safetensors`` in the scenario's own file format (core/io.save_model
  for induction, "headcount-minmax", "headcount-boolean"), readable by every headcount command for
  that task;
* format ``transformer-lens``: ``<name>/`` written by
  core/transformer_lens_io.write_transformer_lens (config, float64 state dict, a snippet that loads
  it); the min/max layer as two weight-form models ``<name>-min/`` and ``<name>-max/``
  (minmax/weight_form.py: exact, one classifier each);
* both: ``<name>.roles.json`` — name, description, task, sizes, format, files, the construction, its
  layers, one entry per head {layer, head, role, mechanism, query, key, value} (0-based; induction
  role names are induction/heads.py's, so `headcount analyze heads` on the exported model can be
  compared with them), the decoder, and a certificate summary computed at export time with the
  command that reproduces it (a ``Command``: its words and parameters; the command line in the file
  spells each parameter as the caller's `spell` does, and `headcount zoo export` passes the CLI's
  flags).

A format an entry cannot be written in is refused with the reason (``Kind.tl_refusal``). Adding a
model is one ``ZooEntry`` (and a ``Kind`` for a new family, as KHOP: the k-hop construction built by
induction/multihop/construction.py, its roles from induction/roles.py).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from headcount.boolean.certification import certify_boolean_model
from headcount.boolean.construction import Construction, construct, construction_roles
from headcount.boolean.model_file import save_boolean
from headcount.boolean.task import parse_function
from headcount.common.errors import InputError, param
from headcount.common.files import atomic_write_bytes
from headcount.common.jsonable import JsonResult, jsonable
from headcount.common.validate import check_choice, filling_folder
from headcount.core.model import OneLayerTable, Transformer, save_model
from headcount.induction.certification import certify_induction
from headcount.induction.construction import one_layer_induction, two_layer_induction
from headcount.induction.multihop.request import hop_construction
from headcount.induction.roles import (
    khop_floor_roles,
    khop_roles,
    one_layer_roles,
    two_layer_roles,
)
from headcount.minmax.certification import certify_minmax
from headcount.minmax.construction import build_construction, code_dim, two_head_roles
from headcount.minmax.model import MinMaxModel, save_minmax
from headcount.minmax.weight_form import minmax_to_transformer

FORMATS = ("headcount", "transformer-lens")
CERTIFY_SAMPLES = (
    64  # induction certificates at export: 64 seeded inputs per random family (~2 s at n=256)
)
CERTIFY_SEED = 0


@dataclass(frozen=True)
class Command:
    """A headcount command that re-derives a certificate: its words ("minmax", "certify") and its
    parameters in order, by their Python names; `line(spell)` is the command line, each name spelled
    by `spell` (the CLI's: headcount.cli.common.flag)."""

    words: tuple[str, ...]
    parameters: tuple[tuple[str, Any], ...]

    def line(self, spell: Callable[[str], str]) -> str:
        options = (f"{spell(name)} {value}" for name, value in self.parameters)
        return " ".join(("headcount", *self.words, *options))


@dataclass(frozen=True)
class Kind:
    """One family of constructions: how it is built from an entry's sizes, what its heads do, how it
    is certified (a summary and the Command that re-derives it) and written; ``weight_forms`` gives
    the weight-form Transformers TransformerLens receives ({suffix: model}), None when
    ``tl_refusal`` says why it cannot."""

    task: str
    build: Callable[[dict[str, Any]], Any]
    roles: Callable[[dict[str, Any], Any], dict[str, Any]]
    certify: Callable[[dict[str, Any], Any], tuple[dict[str, Any], Command]]
    save: Callable[[dict[str, Any], Any, str], None]
    weight_forms: Callable[[dict[str, Any], Any], dict[str, Transformer]] | None = None
    tl_refusal: str | None = None


def _certify_induction(
    sizes: dict[str, Any], model: Transformer | OneLayerTable
) -> tuple[dict[str, Any], Command]:
    """certify_induction on CERTIFY_SAMPLES seeded inputs per family (the adversarial families
    included)."""
    n, alphabet, hops = sizes["n"], sizes["alphabet"], sizes.get("hops", 1)
    c = certify_induction(
        model, n, alphabet, samples=CERTIFY_SAMPLES, seed=CERTIFY_SEED, hops=hops, dtypes=False
    )
    cert = c.certificate
    layers = len(model.layers) if isinstance(model, Transformer) else 1
    hop_option = (("hops", hops),) if hops > 1 else ()
    if "depth" in sizes:  # the construction is picked by its depth's name
        hop_option += (("depth", sizes["depth"]),)
    options = (("layers", layers), ("n", n), ("alphabet", alphabet), ("samples", CERTIFY_SAMPLES))
    summary = {
        "certified": cert.certified,
        "scope": c.scope,
        "inputs_checked": cert.inputs_checked,
        "errors": cert.errors,
        "precision_bits": cert.precision_bits,
        "what": "certified: every position of the inputs checked proven right at "
        "fixed:precision_bits",
    }
    return summary, Command(
        ("induction", "certify"), (*hop_option, *options, ("seed", CERTIFY_SEED))
    )


def _certify_minmax(sizes: dict[str, Any], model: MinMaxModel) -> tuple[dict[str, Any], Command]:
    """certify_minmax of the same construction (its arguments rebuild this model exactly)."""
    M, n, code, seed = sizes["M"], sizes["n"], sizes["code"], sizes["seed"]
    c = certify_minmax(M, n, 2, code, seed)
    summary = {
        "certified": c.certified,
        "scope": c.scope,
        "inputs_covered": c.inputs_covered,
        "method": c.method,
        "margin_min": c.margin_min,
        "margin_max": c.margin_max,
        "what": "certified: both classifiers right on every list of [M]^n (every multiset, "
        "decided exactly)",
    }
    options = (("M", M), ("n", n), ("heads", 2), ("code", code), ("seed", seed))
    return summary, Command(("minmax", "certify"), options)


def _certify_boolean(sizes: dict[str, Any], built: Construction) -> tuple[dict[str, Any], Command]:
    F = parse_function(sizes["function"], sizes["n"])
    c = certify_boolean_model(built.layer, built.readout, F)
    summary = {
        "certified": c.certified,
        "scope": c.scope,
        "weights_checked": c.weights_checked,
        "errors": c.errors,
        "min_abs_margin": c.min_abs_margin,
        "what": "certified: right on all 2^n inputs in exact rational arithmetic (every weight t "
        "= 0..n)",
    }
    options = tuple((key, sizes[key]) for key in ("function", "n", "degree", "heads"))
    return summary, Command(("boolean", "construct"), options)


def _build_boolean(sizes: dict[str, Any]) -> Construction:
    F = parse_function(sizes["function"], sizes["n"])
    return construct(F, sizes["n"], sizes["degree"], sizes["heads"])


def _save_boolean(sizes: dict[str, Any], built: Construction, path: str) -> None:
    info = {"construction": built.route, "function": sizes["function"], "n": sizes["n"]}
    save_boolean(built.layer, built.readout, path, info)


TWO_LAYER = Kind(
    task="induction",
    build=lambda s: two_layer_induction(s["n"], s["alphabet"]),
    roles=lambda s, model: two_layer_roles(s["n"], s["alphabet"]),
    certify=_certify_induction,
    save=lambda s, model, path: save_model(model, path),
    weight_forms=lambda s, model: {"": model},
)
ONE_LAYER = Kind(
    task="induction",
    build=lambda s: one_layer_induction(s["n"], s["alphabet"]),
    roles=lambda s, model: one_layer_roles(s["n"], s["alphabet"]),
    certify=_certify_induction,
    save=lambda s, model, path: save_model(model, path),
    tl_refusal="the one-layer construction is a table model (its values Ṽ[j, σ] = (σ+1)·e_j tie "
    "each token "
    "to its position, which no W_E + W_pos embedding does) with a non-linear readout that reads "
    "the prefix "
    "back; TransformerLens holds weight-form models with a linear unembedding",
)
MINMAX = Kind(
    task="minmax",
    build=lambda s: build_construction(s["M"], s["n"], 2, s["code"], s["seed"]),
    roles=lambda s, model: two_head_roles(s["M"], s["n"], code_dim(s["M"], s["code"])),
    certify=_certify_minmax,
    save=lambda s, model, path: save_minmax(model, path),
    weight_forms=lambda s, model: {
        f"-{t}": minmax_to_transformer(model, s["n"], t) for t in ("min", "max")
    },
)
KHOP = Kind(
    task="khop",
    build=lambda s: hop_construction(s["n"], s["alphabet"], s["hops"], s.get("depth", "ceil")),
    roles=lambda s, model: (khop_floor_roles if s.get("depth") == "floor" else khop_roles)(
        s["n"], s["alphabet"], s["hops"]
    ),
    certify=_certify_induction,
    save=lambda s, model, path: save_model(model, path),
    weight_forms=lambda s, model: {"": model},
)
BOOLEAN = Kind(
    task="boolean",
    build=_build_boolean,
    roles=lambda s, built: construction_roles(built, s["n"]),
    certify=_certify_boolean,
    save=_save_boolean,
    tl_refusal="the XOR model's heads are exact rational exp-weights w_b, whose scores log w_b are "
    "irrational (no float64 weight holds them exactly), and its readout is the sign of a "
    "polynomial, "
    "not a linear unembedding",
)


@dataclass(frozen=True)
class ZooEntry:
    """One ready model: its name, a one-line description, its family (Kind) and its sizes."""

    name: str
    description: str
    kind: Kind
    sizes: dict[str, Any]

    @property
    def formats(self) -> tuple[str, ...]:
        return FORMATS if self.kind.weight_forms is not None else ("headcount",)

    def to_json(self) -> dict[str, Any]:
        out = {
            "name": self.name,
            "description": self.description,
            "task": self.kind.task,
            "sizes": dict(self.sizes),
            "formats": list(self.formats),
        }
        if self.kind.tl_refusal is not None:
            out["not_available"] = {"transformer-lens": self.kind.tl_refusal}
        return out


def _two_layer(n: int, alphabet: int) -> ZooEntry:
    return ZooEntry(
        f"induction-2layer-n{n}-s{alphabet}",
        f"two-layer induction heads at n = {n}, S = {alphabet}: previous-token and "
        "duplicate-token heads, "
        "then an induction head; d_model 19 (seed 000's upper bound)",
        TWO_LAYER,
        {"n": n, "alphabet": alphabet},
    )


ENTRIES: tuple[ZooEntry, ...] = (
    _two_layer(16, 4),
    _two_layer(64, 8),
    _two_layer(256, 16),
    ZooEntry(
        "induction-1layer-n16-s4",
        "one-layer induction heads at n = 16, S = 4: one uniform head in table form (d_model n + "
        "1) and a "
        "readout that reads the prefix back (the O(n log n) upper bound)",
        ONE_LAYER,
        {"n": 16, "alphabet": 4},
    ),
    ZooEntry(
        "minmax-2head-m8-n8",
        "min and max of 8 tokens from 1..8: one layer, a min head and a max head writing ±1 codes "
        "(seed 004, Appendix A); two linear classifiers",
        MINMAX,
        {"M": 8, "n": 8, "heads": 2, "code": "sign", "seed": 0},
    ),
    ZooEntry(
        "xor-n8",
        "XOR of 8 bits: one layer of H = 4 exact heads, value dimension 2, the sign of a degree-2 "
        "readout; "
        "D·H = 8 = n, the threshold degree (seed 004, Theorem 3)",
        BOOLEAN,
        {"function": "xor", "n": 8, "degree": 2, "heads": 4},
    ),
    ZooEntry(
        "khop-8hop-n128-s4",
        "k-hop induction heads, k = 8, at n = 128, S = 4 by pointer doubling: previous-token and "
        "duplicate-token heads, the find head, then pointer heads following find, find^2, find^4 "
        "(⌈log₂ 8⌉ + 2 = 5 layers, d_model 28)",
        KHOP,
        {"n": 128, "alphabet": 4, "hops": 8},
    ),
    ZooEntry(
        "khop-7hop-floor-n128-s4",
        "k-hop induction heads, k = 7, at n = 128, S = 4 in ⌊log₂ 7⌋ + 2 = 4 layers (one fewer "
        "than pointer doubling needs): seven level heads find the latest strictly earlier match, "
        "then pointer heads following find, find^2, find^4 (d_model 75)",
        KHOP,
        {"n": 128, "alphabet": 4, "hops": 7, "depth": "floor"},
    ),
)
NAMES = tuple(e.name for e in ENTRIES)


def entry(name: str) -> ZooEntry:
    """The entry called `name` (InputError listing the names otherwise: the name is the CLI's
    argument NAME, no parameter a flag spells, so the message leaves it unmarked)."""
    if name not in NAMES:
        raise InputError(
            f"NAME {name!r} is not available: use {', '.join(NAMES[:-1])} or {NAMES[-1]}"
        )
    return ENTRIES[NAMES.index(name)]


@dataclass(frozen=True)
class ZooList(JsonResult):
    """`headcount zoo list`: every entry and the formats."""

    entries: tuple[ZooEntry, ...]
    formats: tuple[str, ...] = FORMATS


def zoo_list() -> ZooList:
    return ZooList(ENTRIES)


@dataclass(frozen=True)
class ZooExport(JsonResult):
    """What `headcount zoo export` wrote: the folder, every file (paths), the roles file, the
    certificate summary, and the TransformerLens writer's results ({folder: its JSON}; empty for
    format headcount)."""

    name: str
    format: str
    out: str
    files: tuple[str, ...]
    roles: str
    certificate: dict[str, Any]
    transformer_lens: dict[str, Any]


def _layers(model: Any) -> list[dict[str, Any]]:
    """The model's layers as the roles file lists them."""
    if isinstance(model, Transformer):
        return [
            {
                "layer": l,
                "heads": len(layer.heads),
                "d_head": [h.W_Q.shape[1] for h in layer.heads],
                "d_value": [h.W_V.shape[1] for h in layer.heads],
                "mlp": layer.mlp is not None,
            }
            for l, layer in enumerate(model.layers)
        ]
    if isinstance(model, OneLayerTable):
        return [{"layer": 0, "heads": model.Q.shape[0], "form": "table"}]
    layer = model.layer  # a MinMaxModel or a Boolean Construction
    return [{"layer": 0, "heads": layer.n_heads, "dim": layer.dim}]


def _write_json(path: Path, data: dict[str, Any]) -> None:
    text = json.dumps(jsonable(data), indent=2, ensure_ascii=False) + "\n"
    atomic_write_bytes(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))


def _write_transformer_lens(
    name: str, forms: dict[str, Transformer], folder: Path
) -> dict[str, Any]:
    """Each weight form into folder/<name><suffix>/ by core/transformer_lens_io: {<name><suffix>:
    the writer's JSON}. A missing TransformerLens is an InputError saying how to install it."""
    try:
        from headcount.interop.transformer_lens_io import write_transformer_lens
    except ModuleNotFoundError as err:
        if err.name not in ("transformer_lens", "headcount.interop.transformer_lens_io"):
            raise
        raise InputError("TransformerLens is not installed: pip install 'headcount[tl]'") from None
    written = {}
    for suffix, weight_form in forms.items():
        target = (
            folder / f"{name}{suffix}"
        )  # a link planted there would send the files outside `out`
        written[target.name] = jsonable(
            write_transformer_lens(weight_form, target, follow=False, option="the folder")
        )
    return written


def _files_under(folder: Path, names: list[str]) -> list[str]:
    """Every file under folder/name for each name (a file itself, or a folder's files), sorted."""
    out = []
    for name in names:
        path = folder / name
        out += (
            sorted(str(p) for p in path.rglob("*") if p.is_file()) if path.is_dir() else [str(path)]
        )
    return out


def export(
    name: str,
    format: str = "headcount",
    out: str | os.PathLike = ".",
    spell: Callable[[str], str] | None = None,
) -> ZooExport:
    """Write the entry `name` into the folder `out` in `format` with its roles file (module
    docstring). The certificate's "command" is the command line that re-derives it, each parameter
    spelled by `spell` (`headcount zoo export` passes headcount.cli.common.flag); None without
    one."""
    e = entry(name)
    check_choice("format", format, FORMATS)
    if format not in e.formats:
        raise InputError(
            f"{name} cannot be written as {param('format')} {format}: {e.kind.tl_refusal}; "
            f"use {param('format')} headcount"
        )
    with filling_folder(out) as folder:  # made if missing, and removed again if it cannot be filled
        return _write_entry(name, format, e, folder, spell)


def _write_entry(
    name: str, fmt: str, e: ZooEntry, folder: Path, spell: Callable[[str], str] | None
) -> ZooExport:
    """The model, its TransformerLens forms where asked, and the roles file, into `folder`."""
    model = e.kind.build(e.sizes)
    summary, command = e.kind.certify(e.sizes, model)
    certificate = {**summary, "command": None if spell is None else command.line(spell)}
    tl: dict[str, Any] = {}
    if fmt == "headcount":
        weights = [f"{name}.safetensors"]
        e.kind.save(e.sizes, model, str(folder / weights[0]))
    else:
        forms = e.kind.weight_forms(e.sizes, model)
        tl = _write_transformer_lens(name, forms, folder)
        weights = list(tl)
    roles = e.kind.roles(e.sizes, model)
    data = {
        "name": name,
        "description": e.description,
        "task": e.kind.task,
        "sizes": e.sizes,
        "format": fmt,
        "files": weights,
        "construction": roles.pop("construction"),
        "layers": _layers(model),
        **roles,
        "certificate": certificate,
    }
    if fmt == "transformer-lens":
        data["transformer_lens"] = _tl_notes(name, forms, tl)
    roles_path = folder / f"{name}.roles.json"
    _write_json(roles_path, data)
    files = tuple(_files_under(folder, weights)) + (str(roles_path),)
    return ZooExport(name, fmt, str(folder), files, str(roles_path), certificate, tl)


def _tl_notes(name: str, forms: dict[str, Transformer], written: dict[str, Any]) -> dict[str, Any]:
    """What the roles file says about the TransformerLens files: the writer's results per folder
    (without absolute paths, so the folder may move), padding, and for the min/max layer its weight
    form's layout."""
    notes: dict[str, Any] = {
        "padding": "layers with fewer heads (or narrower heads) than the widest are zero-padded "
        "in the "
        "TransformerLens files; a padded head writes exactly 0 and has no role",
        "exports": {
            folder: {k: v for k, v in w.items() if k not in ("out_dir", "files")}
            for folder, w in written.items()
        },
    }
    first = next(iter(forms.values()))
    if first.info.get("construction") == "minmax_weight_form":
        notes["weight_form"] = {
            "description": "minmax/weight_form.py: a constant query coordinate, key = the token's "
            "score, "
            "values from the embedding, the heads' sum in the OUT block; token t is ω = t + 1 and "
            "the "
            "answer is at the last position; one model per classifier",
            "models": {f"{name}{s}": f.info["task"] for s, f in forms.items()},
            "coordinates": first.info["coordinates"],
        }
    return notes
