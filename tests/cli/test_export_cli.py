"""`headcount export transformer-lens` and `headcount import transformer-lens` on the command line:
one JSON object on success, files that read back bit-identical, exit 2 with one line for what
TransformerLens cannot hold or a path that cannot be used. Writing and reading the files needs no
TransformerLens (the snippet's run is in tests/core/test_transformer_lens.py); importing reads
config.json and model.safetensors alone, whatever the tokenizer files and load.py hold."""

from __future__ import annotations

import json

import numpy as np
import pytest

from headcount.core.model.files import load_model, save_model
from headcount.induction.construction import two_layer_induction
from tests.cli_run import refused, run


@pytest.fixture
def construction(tmp_path):
    """The two-layer construction (n = 8, S = 3) as a model file."""
    path = tmp_path / "m.safetensors"
    save_model(two_layer_induction(8, 3), path)
    return path


def _arrays(model) -> list[np.ndarray]:
    out = [model.W_E, model.W_pos, *model.decoder.tensors().values()]
    for layer in model.layers:
        out += [getattr(h, n) for h in layer.heads for n in ("W_Q", "W_K", "W_V", "W_O")]
    return out


def test_export_prints_one_json_object_and_writes_five_files(capsys, tmp_path, construction):
    out = tmp_path / "tl"
    code, stdout, err = run(
        capsys,
        "export",
        "transformer-lens",
        "--model",
        str(construction),
        "--out",
        str(out),
        "--json",
    )
    assert code == 0, err
    result = json.loads(stdout)
    assert result["out_dir"] == str(out)
    names = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json")
    assert result["files"] == [str(out / n) for n in (*names, "load.py")]
    assert (result["heads"], result["padded"], result["exact_round_trip"]) == ([2, 1], True, True)
    cfg = result["config"]
    assert (cfg["n_layers"], cfg["n_heads"], cfg["d_head"], cfg["d_model"]) == (2, 2, 5, 19)
    assert (cfg["attn_scale"], cfg["attention_dir"], cfg["d_vocab"], cfg["d_vocab_out"]) == (
        2.0,
        "causal",
        3,
        4,
    )
    assert cfg["architecture"] == "TransformerLensNative" and cfg["normalization_type"] is None
    assert (cfg["default_prepend_bos"], cfg["tokenizer_prepends_bos"]) == (False, False)
    assert cfg["headcount_heads_per_layer"] == [2, 1] and cfg["headcount_padded_heads"] == [[1, 1]]
    vocab = json.loads((out / "tokenizer.json").read_text())["model"]["vocab"]
    assert vocab == {"0": 0, "1": 1, "2": 2, "<unk>": 3, "<pad>": 4}
    assert result["snippet"] == (out / "load.py").read_text()
    assert "headcount" in json.loads((out / "config.json").read_text())


def test_export_prints_a_human_line(capsys, tmp_path, construction):
    code, stdout, _ = run(
        capsys,
        "export",
        "transformer-lens",
        "--model",
        str(construction),
        "--out",
        str(tmp_path / "t"),
    )
    assert code == 0
    assert stdout.startswith(
        f"wrote {tmp_path / 't'}: TransformerLens 2 layer(s) × 2 heads of width 5"
    )
    assert stdout.strip().endswith(f"python {tmp_path / 't' / 'load.py'}")


def test_export_then_import_is_bit_identical(capsys, tmp_path, construction):
    out, back = tmp_path / "tl", tmp_path / "back.safetensors"
    assert (
        run(capsys, "export", "transformer-lens", "--model", str(construction), "--out", str(out))[
            0
        ]
        == 0
    )
    code, stdout, err = run(
        capsys, "import", "transformer-lens", str(out), "--out", str(back), "--json"
    )
    assert code == 0, err
    result = json.loads(stdout)
    assert result == {
        "path": str(back),
        "source": str(out),
        "record": True,
        "layers": 2,
        "heads": [2, 1],
        "d_model": 19,
        "vocab": 3,
        "n_ctx": 8,
        "decoder": "linear",
        "extensions": [],
    }
    a, b = load_model(construction), load_model(back)
    assert a.info == b.info and all(
        x.tobytes() == y.tobytes() for x, y in zip(_arrays(a), _arrays(b))
    )
    # the tokenizer files and load.py are never read: hostile ones change nothing
    (out / "tokenizer.json").write_bytes(b"\x80\x04cos\nsystem\n.")
    (out / "tokenizer_config.json").write_text("[" * 100_000)
    (out / "load.py").write_text("raise SystemExit('ran')\n")
    again = tmp_path / "again.safetensors"
    code, stdout, err = run(
        capsys, "import", "transformer-lens", str(out), "--out", str(again), "--json"
    )
    assert code == 0, err
    assert json.loads(stdout)["heads"] == [2, 1] and again.read_bytes() == back.read_bytes()


def test_a_table_model_is_refused_saying_why(capsys, tmp_path):
    table = tmp_path / "t.safetensors"
    code, _, err = run(
        capsys,
        "induction",
        "construct",
        "--layers",
        "1",
        "--n",
        "5",
        "--alphabet",
        "3",
        "--out",
        str(table),
    )
    assert code == 0, err
    refused(
        capsys,
        "export",
        "transformer-lens",
        "--model",
        str(table),
        "--out",
        str(tmp_path / "x"),
        needles=("table model", "position"),
    )
    assert not (tmp_path / "x").exists()


def test_paths_that_cannot_be_used_are_refused(capsys, tmp_path, construction):
    (tmp_path / "file").write_text("x")
    export = ("export", "transformer-lens", "--model")
    refused(
        capsys,
        *export,
        str(tmp_path / "missing"),
        "--out",
        str(tmp_path / "o"),
        needles=("does not exist",),
    )
    refused(
        capsys,
        *export,
        str(construction),
        "--out",
        str(tmp_path / "file"),
        needles=("not a folder",),
    )
    refused(capsys, *export, str(construction), needles=("--out",))
    imp = ("import", "transformer-lens")
    refused(
        capsys,
        *imp,
        str(tmp_path / "file"),
        "--out",
        str(tmp_path / "m"),
        needles=("not a folder",),
    )
    (tmp_path / "empty").mkdir()
    refused(
        capsys,
        *imp,
        str(tmp_path / "empty"),
        "--out",
        str(tmp_path / "m"),
        needles=("config.json",),
    )
    refused(capsys, *imp, str(tmp_path), "--out", str(tmp_path), needles=("folder",))
