"""Tests for model files (headcount.core.model.files): bit-identical round trips, the file format,
clean errors on bad files, atomic writes."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import numpy as np
import pytest
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

import headcount.common.files as files
import headcount.core.model.files as io
from headcount.common.errors import InputError
from headcount.core.certify.evaluate import predict
from headcount.core.model import MLP, AttentionHead, Layer, LinearDecoder, Transformer
from headcount.core.model.files import (
    FORMAT,
    TABLE_FORMAT,
    ModelFileError,
    load_model,
    read_config,
    save_model,
)
from headcount.core.model.table import OneLayerTable
from headcount.induction.construction import one_layer_induction, two_layer_induction
from headcount.induction.task import all_sequences


def random_mlp_model(seed: int = 0) -> Transformer:
    rng = np.random.default_rng(seed)
    d, n, S = 5, 4, 3
    layers = (
        Layer(
            (
                AttentionHead(
                    rng.normal(size=(d, 2)),
                    rng.normal(size=(d, 2)),
                    rng.normal(size=(d, 3)),
                    rng.normal(size=(3, d)),
                ),
            ),
            MLP(
                rng.normal(size=(d, 7)),
                rng.normal(size=7),
                rng.normal(size=(7, d)),
                rng.normal(size=d),
            ),
        ),
        Layer(
            tuple(
                AttentionHead(
                    rng.normal(size=(d, 1)),
                    rng.normal(size=(d, 1)),
                    rng.normal(size=(d, 2)),
                    rng.normal(size=(2, d)),
                )
                for _ in range(3)
            ),
            None,
        ),
    )
    W_E = rng.normal(size=(S, d))
    W_E[0, 0] = 5e-324  # a subnormal, a negative zero and extreme values survive bit for bit
    W_E[0, 1] = -0.0
    W_E[1, 0] = 1.7976931348623157e308
    return Transformer(
        W_E,
        rng.normal(size=(n, d)),
        layers,
        LinearDecoder(rng.normal(size=(d, S + 1)), rng.normal(size=S + 1)),
        "full",
        {"name": "random", "seed": seed, "nested": {"list": [1, 2.5, None, "⊥"], "flag": True}},
    )


def same_array(a: np.ndarray, b: np.ndarray) -> bool:
    return (
        a.dtype == b.dtype
        and a.shape == b.shape
        and np.array_equal(a.view(np.uint64), b.view(np.uint64))
    )


def assert_same_model(a, b) -> None:
    assert type(a) is type(b)
    assert a.mask == b.mask
    assert a.info == b.info
    assert type(a.decoder) is type(b.decoder)
    assert a.decoder.kind == b.decoder.kind and a.decoder.config() == b.decoder.config()
    da, db = a.decoder.tensors(), b.decoder.tensors()
    assert da.keys() == db.keys()
    for key in da:
        assert same_array(da[key], db[key]), key
    if isinstance(a, OneLayerTable):
        for name in ("embed", "Q", "K", "V"):
            assert same_array(getattr(a, name), getattr(b, name)), name
        return
    assert same_array(a.W_E, b.W_E) and same_array(a.W_pos, b.W_pos)
    assert len(a.layers) == len(b.layers)
    for la, lb in zip(a.layers, b.layers):
        assert len(la.heads) == len(lb.heads)
        for ha, hb in zip(la.heads, lb.heads):
            for name in ("W_Q", "W_K", "W_V", "W_O"):
                assert same_array(getattr(ha, name), getattr(hb, name)), name
        assert (la.mlp is None) == (lb.mlp is None)
        if la.mlp is not None:
            for name in ("W_in", "b_in", "W_out", "b_out"):
                assert same_array(getattr(la.mlp, name), getattr(lb.mlp, name)), name


MODELS = {
    "two_layer": lambda: two_layer_induction(6, 3),
    "one_layer_table": lambda: one_layer_induction(5, 3),
    "random_mlp": random_mlp_model,
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_round_trip_is_bit_identical(name, tmp_path):
    model = MODELS[name]()
    path = tmp_path / f"{name}.safetensors"
    save_model(model, path)
    loaded = load_model(path)
    assert_same_model(model, loaded)
    # and so is a second round trip, byte for byte
    save_model(loaded, tmp_path / "again.safetensors")
    assert path.read_bytes() == (tmp_path / "again.safetensors").read_bytes()
    # the loaded model computes the same outputs
    if name != "random_mlp":
        tokens = all_sequences(model.n_ctx, 3)[:100]
        np.testing.assert_array_equal(predict(loaded, tokens), predict(model, tokens))


def test_round_trip_accepts_str_paths_and_creates_folders(tmp_path):
    path = str(tmp_path / "a" / "b" / "model.safetensors")
    save_model(two_layer_induction(3, 2), path)
    assert_same_model(load_model(path), two_layer_induction(3, 2))


@pytest.mark.parametrize("name", sorted(MODELS))
def test_file_is_plain_safetensors_with_headcount_json(name, tmp_path):
    model = MODELS[name]()
    path = tmp_path / "m.safetensors"
    save_model(model, path)
    with safe_open(str(path), framework="np") as f:
        meta = f.metadata()
        keys = set(f.keys())
    config = json.loads(meta["headcount"])
    assert config["format"] == (TABLE_FORMAT if isinstance(model, OneLayerTable) else FORMAT)
    assert config["version"] == io.VERSION
    assert config["mask"] == model.mask
    assert config["decoder"]["kind"] == model.decoder.kind
    assert read_config(path) == config
    tensors = load_file(str(path))
    assert set(tensors) == keys
    assert all(t.dtype == np.float64 for t in tensors.values())
    if isinstance(model, OneLayerTable):
        assert keys == {"embed", "Q", "K", "V"}
    else:
        assert {"W_E", "W_pos", "layers.0.heads.0.W_Q"} <= keys
        assert config["layers"] == [
            {"heads": len(l.heads), "mlp": l.mlp is not None} for l in model.layers
        ]
        if name == "random_mlp":
            assert {"layers.0.mlp.W_in", "layers.0.mlp.b_out", "decoder.W_U", "decoder.b_U"} <= keys
            assert "layers.1.mlp.W_in" not in keys
    # no pickle anywhere: the header is JSON, the rest raw little-endian numbers
    raw = path.read_bytes()
    header_len = int.from_bytes(raw[:8], "little")
    json.loads(raw[8 : 8 + header_len])


# --------------------------------------------------------------------------------------------------
# bad files: always ModelFileError (a ValueError), one line


def _expect_model_file_error(path, *fragments: str) -> str:
    with pytest.raises(ModelFileError) as info:
        load_model(path)
    message = str(info.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, message
    assert isinstance(info.value, ValueError)
    return message


def _good_file(tmp_path: Path, model=None) -> tuple[dict, dict]:
    path = tmp_path / "good.safetensors"
    save_model(model if model is not None else two_layer_induction(4, 2), path)
    with safe_open(str(path), framework="np") as f:
        meta = f.metadata()
    return load_file(str(path)), json.loads(meta["headcount"])


def test_missing_path(tmp_path):
    _expect_model_file_error(tmp_path / "nope.safetensors", "does not exist", "nope.safetensors")


def test_folder_is_not_a_model(tmp_path):
    _expect_model_file_error(tmp_path)


@pytest.mark.parametrize("content", [b"hello\nworld\n", b"", b"\x00" * 4, b"{}", b"\xff" * 64])
def test_not_a_safetensors_file(tmp_path, content):
    path = tmp_path / "text.safetensors"
    path.write_bytes(content)
    _expect_model_file_error(path, "text.safetensors")


def test_truncated_file(tmp_path):
    save_model(two_layer_induction(4, 2), tmp_path / "m.safetensors")
    raw = (tmp_path / "m.safetensors").read_bytes()
    for cut in (len(raw) - 8, len(raw) // 2, 12):
        (tmp_path / "t.safetensors").write_bytes(raw[:cut])
        _expect_model_file_error(tmp_path / "t.safetensors")


def test_safetensors_without_headcount_metadata(tmp_path):
    tensors, _ = _good_file(tmp_path)
    save_file(tensors, str(tmp_path / "plain.safetensors"))
    _expect_model_file_error(tmp_path / "plain.safetensors", "no headcount config")
    save_file(tensors, str(tmp_path / "other.safetensors"), metadata={"format": "pt"})
    _expect_model_file_error(tmp_path / "other.safetensors", "no headcount config")


def test_headcount_metadata_not_json(tmp_path):
    tensors, _ = _good_file(tmp_path)
    save_file(tensors, str(tmp_path / "m.safetensors"), metadata={"headcount": "{not json"})
    _expect_model_file_error(tmp_path / "m.safetensors", "not JSON")


@pytest.mark.parametrize("fmt", ["pytorch", "headcount-transformer-v2", None, 3])
def test_wrong_format_field(tmp_path, fmt):
    tensors, config = _good_file(tmp_path)
    config["format"] = fmt
    save_file(tensors, str(tmp_path / "m.safetensors"), metadata={"headcount": json.dumps(config)})
    _expect_model_file_error(tmp_path / "m.safetensors", FORMAT)
    del config["format"]
    save_file(tensors, str(tmp_path / "m.safetensors"), metadata={"headcount": json.dumps(config)})
    _expect_model_file_error(tmp_path / "m.safetensors", FORMAT)


@pytest.mark.parametrize(
    "missing", ["W_E", "W_pos", "layers.1.heads.0.W_O", "layers.0.heads.1.W_K", "decoder.W_U"]
)
def test_missing_tensor(tmp_path, missing):
    tensors, config = _good_file(tmp_path)
    del tensors[missing]
    save_file(tensors, str(tmp_path / "m.safetensors"), metadata={"headcount": json.dumps(config)})
    _expect_model_file_error(
        tmp_path / "m.safetensors", "not a valid headcount model", missing.split(".")[-1]
    )


@pytest.mark.parametrize("missing", ["embed", "Q", "K", "V"])
def test_missing_table_tensor(tmp_path, missing):
    tensors, config = _good_file(tmp_path, one_layer_induction(4, 2))
    del tensors[missing]
    save_file(tensors, str(tmp_path / "m.safetensors"), metadata={"headcount": json.dumps(config)})
    _expect_model_file_error(tmp_path / "m.safetensors", missing)


@pytest.mark.parametrize(
    "edit",
    [
        lambda c, t: c.update(layers=5),
        lambda c, t: c.update(layers=[None, None]),
        lambda c, t: c.update(layers=[{"heads": "two"}, {"heads": 1}]),
        lambda c, t: c.update(layers=[{"heads": 3}, {"heads": 1}]),  # more heads than tensors
        lambda c, t: c.update(mask="sideways"),
        lambda c, t: c.update(decoder={"kind": "nonsense"}),
        lambda c, t: c.update(decoder="linear"),
        lambda c, t: c.pop("decoder"),
        lambda c, t: c.pop("layers"),
        lambda c, t: c.pop("mask"),
        lambda c, t: t.update({"W_pos": np.zeros((4, 7))}),  # width does not match W_E
        lambda c, t: t.update(
            {"layers.0.heads.0.W_Q": np.zeros((19, 3))}
        ),  # W_Q, W_K shapes differ
    ],
)
def test_inconsistent_files(tmp_path, edit):
    tensors, config = _good_file(tmp_path)
    edit(config, tensors)
    save_file(tensors, str(tmp_path / "m.safetensors"), metadata={"headcount": json.dumps(config)})
    _expect_model_file_error(tmp_path / "m.safetensors")


@pytest.mark.parametrize(
    "edit",
    [
        lambda c, t: "[1, 2]",
        lambda c, t: "null",
        lambda c, t: (t.update({"W_pos": np.zeros(4)}), json.dumps(c))[1],
        lambda c, t: (t.update({"W_E": np.zeros(19)}), json.dumps(c))[1],
    ],
)
def test_malformed_files_raise_model_file_error(tmp_path, edit):
    tensors, config = _good_file(tmp_path)
    meta = edit(config, tensors)
    save_file(tensors, str(tmp_path / "m.safetensors"), metadata={"headcount": meta})
    _expect_model_file_error(tmp_path / "m.safetensors")


# --------------------------------------------------------------------------------------------------
# atomic writes


def _failing_write(self, data):
    """Write part of a file, then fail — as a full disk or a crash would."""
    with open(self, "wb") as f:
        f.write(b"partial garbage")
    raise OSError(errno.ENOSPC, "No space left on device")


def test_failed_write_leaves_nothing_behind(tmp_path, monkeypatch):
    monkeypatch.setattr(files.Path, "write_bytes", _failing_write)
    with pytest.raises(OSError, match="No space left") as err:
        save_model(two_layer_induction(4, 2), tmp_path / "m.safetensors")
    assert err.value.filename == str(
        tmp_path / "m.safetensors"
    )  # the file asked for, not the temporary
    assert os.listdir(tmp_path) == []


def test_failed_write_keeps_the_existing_file(tmp_path, monkeypatch):
    path = tmp_path / "m.safetensors"
    save_model(one_layer_induction(4, 2), path)
    before = path.read_bytes()
    monkeypatch.setattr(files.Path, "write_bytes", _failing_write)
    with pytest.raises(OSError):
        save_model(two_layer_induction(4, 2), path)
    assert os.listdir(tmp_path) == ["m.safetensors"]
    assert path.read_bytes() == before
    assert_same_model(load_model(path), one_layer_induction(4, 2))


def test_interrupted_write_leaves_nothing_behind(tmp_path, monkeypatch):
    def interrupted(self, data):
        with open(self, "wb") as f:
            f.write(b"x")
        raise KeyboardInterrupt

    path = tmp_path / "m.safetensors"
    save_model(one_layer_induction(3, 2), path)
    before = path.read_bytes()
    monkeypatch.setattr(files.Path, "write_bytes", interrupted)
    with pytest.raises(KeyboardInterrupt):
        save_model(two_layer_induction(3, 2), path)
    assert os.listdir(tmp_path) == ["m.safetensors"] and path.read_bytes() == before


def test_successful_write_replaces_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "m.safetensors"
    save_model(one_layer_induction(3, 2), path)
    save_model(two_layer_induction(3, 2), path)
    assert os.listdir(tmp_path) == ["m.safetensors"]
    assert isinstance(load_model(path), Transformer)


def test_saved_files_get_the_usual_permissions(tmp_path):
    """Atomic writes go through mkstemp (mode 0600); the file must end up 0666 less the umask, like
    any other file the user creates — a model saved with umask 022 is readable by the group and
    others."""
    import os
    import stat

    from headcount.core.model.files import save_model
    from headcount.induction.construction import two_layer_induction
    from headcount.report.render import write_atomic

    old = os.umask(0o022)
    try:
        save_model(two_layer_induction(4, 2), tmp_path / "m.safetensors")
        write_atomic(tmp_path / "r.md", "report")
        os.umask(0o077)
        save_model(two_layer_induction(4, 2), tmp_path / "private.safetensors")
    finally:
        os.umask(old)
    mode = lambda name: stat.S_IMODE((tmp_path / name).stat().st_mode)  # noqa: E731
    assert mode("m.safetensors") == 0o644 and mode("r.md") == 0o644
    assert mode("private.safetensors") == 0o600
    assert not list(tmp_path.glob(".*.tmp"))  # no temporary file left behind


# --------------------------------------------------------------------------------------------------
# bounded reading (issue 13): shapes before tensors, the memory guard, versions, nesting without
# recursion


def test_shapes_are_checked_before_any_tensor_is_loaded(tmp_path, monkeypatch):
    tensors, config = _good_file(tmp_path)
    tensors["decoder.W_U"] = np.zeros((7, 3))  # d_model 7 in a model of d_model 19
    save_file(tensors, str(tmp_path / "m.safetensors"), metadata={"headcount": json.dumps(config)})
    monkeypatch.setattr(
        files, "load_file", lambda *a, **k: pytest.fail("tensors loaded before shape checks")
    )
    _expect_model_file_error(tmp_path / "m.safetensors", "decoder.W_U", "[7, 3]", "[19, '*']")


def test_a_linear_decoder_needs_a_token_and_bottom(tmp_path):
    tensors, config = _good_file(tmp_path)
    tensors["decoder.W_U"], tensors["decoder.b_U"] = np.zeros((19, 1)), np.zeros(1)
    save_file(tensors, str(tmp_path / "m.safetensors"), metadata={"headcount": json.dumps(config)})
    _expect_model_file_error(tmp_path / "m.safetensors", "decoder.W_U", "need ≥ 2")


def test_loading_is_guarded_by_the_memory_limit(tmp_path):
    from headcount.common.resources import memory_limit_of

    model = random_mlp_model()
    big = Transformer(
        np.zeros((3, 5)), np.zeros((70_000, 5)), model.layers, model.decoder, "full", {}
    )
    save_model(big, tmp_path / "big.safetensors")
    with memory_limit_of("1M"), pytest.raises(InputError, match="max_memory") as refused:
        load_model(tmp_path / "big.safetensors")
    assert refused.value.param == "max_memory"
    assert load_model(tmp_path / "big.safetensors").n_ctx == 70_000


@pytest.mark.parametrize("version", [0, 2, "1", 1.5, None])
def test_transformer_and_table_versions_are_checked(tmp_path, version):
    for model in (two_layer_induction(4, 2), one_layer_induction(4, 2)):
        tensors, config = _good_file(tmp_path, model)
        config["version"] = version
        save_file(
            tensors, str(tmp_path / "m.safetensors"), metadata={"headcount": json.dumps(config)}
        )
        _expect_model_file_error(tmp_path / "m.safetensors", "is not supported", "reads version 1")


def test_json_depth_skips_strings_and_needs_no_recursion():
    assert files.json_depth('{"a": [1, {"b": "[[[{{{"}], "c": "\\"]"}') == 3
    assert files.json_depth("[]" * 1000) == 1 and files.json_depth("") == 0
    assert files.json_depth("[" * 1_000_000 + "]" * 1_000_000) == 1_000_000  # no RecursionError


def test_paths_in_messages_are_shortened(tmp_path):
    shown = files.show_path("/" + "d" * 4000 + "/m.safetensors")
    assert len(shown) < 200 and shown.endswith("characters)") and "m.safetensors" in shown
    assert files.show_path("m.safetensors") == "'m.safetensors'"
