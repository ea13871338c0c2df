"""Type confusion in data files (issue 28, point 2): every field of every config and record an
importer reads — as its JSON type schema lists it (GPT2_CONFIG_TYPES; TL_CONFIG_TYPES and
RECORD_TYPES) — set to a value of each other JSON type, as `import gpt2` / `import transformer-lens`
on a folder holding that config. Each must be refused in one line (exit 2) or read (exit 0); never
an internal error (exit 1: an unhashable list that reached a dict lookup) or a traceback. The quick
set tries the values that broke (a list, an object, a list of lists) on every field; the slow set
every value."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from headcount.interop.gpt2 import GPT2_CONFIG_TYPES, import_gpt2
from headcount.interop.transformer_lens_io import export_transformer_lens
from headcount.interop.transformer_lens_state import RECORD_TYPES, TL_CONFIG_TYPES
from tests.core.gpt2_checkpoints import config, state_dict, write_folder
from tests.fuzz.harness import Case, check

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="fork + RLIMIT_AS: Linux only"
)

QUICK_VALUES: tuple[Any, ...] = ([], {"a": 1}, [[]])
EVERY_VALUE: tuple[Any, ...] = QUICK_VALUES + ("x", 1.5, 7, True, None, [{}], {"": []}, -1)


def field_paths(value: Any, schema: Any, path: tuple = ()) -> list[tuple]:
    """The path (keys and list indices) of every field `schema` lists that `value` holds, outermost
    first."""
    out = [path] if path else []
    if isinstance(schema, dict) and isinstance(value, dict):
        for key, inner in schema.items():
            if key in value:
                out += field_paths(value[key], inner, (*path, key))
    elif isinstance(schema, list) and isinstance(value, list) and value:
        out += field_paths(value[0], schema[0], (*path, 0))
    return out


def replaced(value: Any, path: tuple, new: Any) -> Any:
    """A deep copy of `value` with the field at `path` set to `new`."""
    copy = json.loads(json.dumps(value))
    inner = copy
    for step in path[:-1]:
        inner = inner[step]
    inner[path[-1]] = new
    return copy


def _variants(root: Path, folder: Path, schema: Any, values, command: str) -> list[Case]:
    """One case per (field, value): a copy of `folder` whose config.json holds `value` at the
    field."""
    base = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    cases = []
    for path in field_paths(base, schema):
        for i, value in enumerate(values):
            name = ".".join(map(str, path))
            variant = root / f"{command.replace(' ', '-')}-{name}-{i}"
            variant.mkdir()
            for part in folder.iterdir():
                if part.name != "config.json":
                    os.link(part, variant / part.name)
            (variant / "config.json").write_text(
                json.dumps(replaced(base, path, value)), encoding="utf-8"
            )
            argv = (*command.split(), str(variant), "--out", "out.safetensors", "--json")
            cases.append(Case("import", command, f"field:{name}", json.dumps(value)[:40], argv))
    return cases


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path]:
    """A TransformerLens export (with its record) and a GPT-2 checkpoint folder (every schema field
    set)."""
    root = tmp_path_factory.mktemp("type-confusion")
    fields = {
        "layer_norm_epsilon": 1e-5,
        "scale_attn_weights": True,
        "reorder_and_upcast_attn": False,
    }
    fields |= {"scale_attn_by_inverse_layer_idx": False, "position_embedding_type": "absolute"}
    fields |= {
        "n_layer": 2,
        "n_embd": 8,
        "vocab_size": 11,
        "n_positions": 6,
        "n_ctx": 6,
        "n_inner": None,
    }
    fields |= {"num_attention_heads": 2}
    write_folder(root / "gpt2", state_dict(), config(**fields))
    # the TL export of the imported GPT-2 model: its record has MLP widths, biases and a vocab
    # decoder
    import_gpt2(root / "gpt2", root / "m.safetensors")
    export_transformer_lens(root / "m.safetensors", root / "tl")
    tl_config = json.loads((root / "tl" / "config.json").read_text(encoding="utf-8"))
    tl_config |= {"positional_embedding_type": "standard"}
    tl_config["headcount"]["decoder"]["labels"] = list(range(tl_config["d_vocab_out"]))
    (root / "tl" / "config.json").write_text(json.dumps(tl_config), encoding="utf-8")
    yield {"tl": root / "tl", "gpt2": root / "gpt2", "root": root}
    shutil.rmtree(root, ignore_errors=True)


def _cases(folders, values) -> list[Case]:
    root = folders["root"] / f"cases-{len(values)}"
    root.mkdir()
    tl_schema = TL_CONFIG_TYPES | {"headcount": RECORD_TYPES}
    return _variants(root, folders["tl"], tl_schema, values, "import transformer-lens") + _variants(
        root, folders["gpt2"], GPT2_CONFIG_TYPES, values, "import gpt2"
    )


def test_every_schema_field_reaches_the_cases(folders):
    """The fixtures hold every field the schemas list (so no field escapes the fuzz)."""
    tl = json.loads((folders["tl"] / "config.json").read_text(encoding="utf-8"))
    gpt2 = json.loads((folders["gpt2"] / "config.json").read_text(encoding="utf-8"))
    assert {p[0] for p in field_paths(gpt2, GPT2_CONFIG_TYPES)} == set(GPT2_CONFIG_TYPES)
    assert {p[0] for p in field_paths(tl, TL_CONFIG_TYPES)} == set(TL_CONFIG_TYPES)
    record = {p[-1] for p in field_paths(tl["headcount"], RECORD_TYPES) if isinstance(p[-1], str)}
    listed = {
        "format",
        "version",
        "info",
        "decoder",
        "layers",
        "kind",
        "readout",
        "b_U",
        "heads",
        "b_O",
    }
    assert listed | {"attn_scale", "q_factor", "mlp", "biases", "d_head", "d_value"} <= record


def test_type_confusion_quick(folders):
    report = check(_cases(folders, QUICK_VALUES), "type-confusion-quick")
    assert not report.failures, report.describe()


@pytest.mark.slow
def test_type_confusion_every_value(folders):
    report = check(_cases(folders, EVERY_VALUE), "type-confusion-full")
    assert not report.failures, report.describe()
