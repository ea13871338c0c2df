"""`headcount zoo` (issue 15, point 5): the list, the export in every format an entry has, the files
read back as the constructions, the roles files' schema, and the roles against `analyze heads` on
the exported models."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import numpy as np
import pytest
from flint import fmpq

from headcount import zoo
from headcount.boolean.certification import check_model
from headcount.boolean.construction import construct, construction_roles
from headcount.boolean.model_file import load_boolean
from headcount.boolean.task import parse_function
from headcount.cli.common import flag
from headcount.common.errors import InputError
from headcount.core.model import Transformer
from headcount.core.model.files import load_model
from headcount.core.model.table import OneLayerTable
from headcount.induction.construction import one_layer_induction, two_layer_induction
from headcount.induction.heads import analyze_heads
from headcount.induction.roles import one_layer_roles, two_layer_roles
from headcount.minmax.construction import build_construction
from headcount.minmax.model import load_minmax
from tests.cli_run import refused, run

NAMES = (
    "induction-2layer-n16-s4",
    "induction-2layer-n64-s8",
    "induction-2layer-n256-s16",
    "induction-1layer-n16-s4",
    "minmax-2head-m8-n8",
    "xor-n8",
    "khop-8hop-n128-s4",
    "khop-7hop-floor-n128-s4",
)
TWO_LAYER = NAMES[:3]
TL_NAMES = (*TWO_LAYER, "minmax-2head-m8-n8", "khop-8hop-n128-s4", "khop-7hop-floor-n128-s4")
HEAD_KEYS = {"layer", "head", "role", "mechanism", "query", "key", "value"}
ROLES_KEYS = {
    "name",
    "description",
    "task",
    "sizes",
    "format",
    "files",
    "construction",
    "layers",
    "heads",
}


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> dict[str, tuple[zoo.ZooExport, dict]]:
    """Every entry exported once in format headcount, its command spelled as the CLI does: {name:
    (result, roles JSON)}."""
    folder = tmp_path_factory.mktemp("zoo")
    out = {}
    for name in NAMES:
        result = zoo.export(name, "headcount", folder, spell=flag)
        out[name] = (result, json.loads(Path(result.roles).read_text(encoding="utf-8")))
    return out


def test_list_names_formats_and_reasons(capsys):
    code, stdout, _ = run(capsys, "zoo", "list", "--json")
    listed = json.loads(stdout)
    assert code == 0 and listed["formats"] == ["headcount", "transformer-lens"]
    entries = {e["name"]: e for e in listed["entries"]}
    assert tuple(entries) == NAMES
    for name, e in entries.items():
        assert e["formats"] == (
            ["headcount", "transformer-lens"] if name in TL_NAMES else ["headcount"]
        )
        assert ("not_available" in e) == (name not in TL_NAMES) and e["description"]
    assert entries["induction-2layer-n64-s8"]["sizes"] == {"n": 64, "alphabet": 8}
    assert entries["xor-n8"]["sizes"] == {"function": "xor", "n": 8, "degree": 2, "heads": 4}
    assert (entries["minmax-2head-m8-n8"]["task"], entries["xor-n8"]["task"]) == (
        "minmax",
        "boolean",
    )
    assert "table model" in entries["induction-1layer-n16-s4"]["not_available"]["transformer-lens"]
    assert "irrational" in entries["xor-n8"]["not_available"]["transformer-lens"]
    code, stdout, _ = run(capsys, "zoo", "list")
    assert (
        code == 0 and len(stdout.splitlines()) == len(NAMES) and stdout.startswith(f"{NAMES[0]}: ")
    )


@pytest.mark.parametrize("name", NAMES)
def test_roles_file_schema(exported, name):
    result, roles = exported[name]
    assert ROLES_KEYS | {"decoder", "certificate"} <= set(roles)
    assert (roles["name"], roles["format"], roles["files"]) == (
        name,
        "headcount",
        [f"{name}.safetensors"],
    )
    assert roles["sizes"] == zoo.entry(name).sizes and roles["task"] == zoo.entry(name).kind.task
    heads = roles["heads"]
    per_layer = [layer["heads"] for layer in roles["layers"]]
    assert [(h["layer"], h["head"]) for h in heads] == [
        (l, h) for l, k in enumerate(per_layer) for h in range(k)
    ]
    for h in heads:
        assert HEAD_KEYS <= set(h) and all(
            isinstance(h[k], str) and h[k] for k in HEAD_KEYS - {"layer", "head"}
        )
    cert = roles["certificate"]
    assert (
        cert["certified"] is True
        and cert["command"].startswith("headcount ")
        and cert == result.certificate
    )
    assert result.files == (str(Path(result.out) / f"{name}.safetensors"), result.roles)
    assert all(Path(f).is_file() for f in result.files)


def test_roles_are_the_constructions(exported):
    roles = {name: [h["role"] for h in exported[name][1]["heads"]] for name in NAMES}
    for name in TWO_LAYER:
        assert roles[name] == ["previous_token", "duplicate_token", "induction"]
    assert roles["induction-1layer-n16-s4"] == ["uniform"]
    assert roles["minmax-2head-m8-n8"] == ["min", "max"]
    assert roles["xor-n8"] == ["partial_fraction"] * 4
    xor = exported["xor-n8"][1]
    assert [(h["c"], h["w0"], h["w1"]) for h in xor["heads"]] == [
        (str(c), "1", str(c + 1)) for c in range(1, 5)
    ]
    assert xor["decoder"]["terms"] == [{"exponent": [1, 1], "coefficient": "1"}]
    assert xor["decoder"]["degree"] == 2 and xor["construction"] == "factorization"
    two = exported["induction-2layer-n16-s4"][1]
    assert two["residual"]["COPIED"] == [12, 13, 14, 15] and two["decoder"]["bottom_class"] == 4
    assert two["layers"][0] == {
        "layer": 0,
        "heads": 2,
        "d_head": [4, 4],
        "d_value": [4, 1],
        "mlp": False,
    }
    assert exported["minmax-2head-m8-n8"][1]["code_dim"] == 17
    floor = exported["khop-7hop-floor-n128-s4"][1]
    assert roles["khop-7hop-floor-n128-s4"] == ["level_match"] * 7 + [
        "induction",
        "find^2",
        "find^4",
    ]
    assert floor["construction"] == "khop_floor_levels" and floor["layers"][0]["heads"] == 7
    assert "--depth floor" in floor["certificate"]["command"]


def test_two_layer_roles_name_the_coordinates_each_head_reads_and_writes():
    """The residual coordinates the roles name are those the construction's weights read and
    write."""
    roles = two_layer_roles(64, 8)
    r = roles["residual"]
    prev, dup, ind = (h for layer in two_layer_induction(64, 8).layers for h in layer.heads)

    def rows(W):
        return sorted(int(i) for i in np.flatnonzero(np.abs(W).sum(axis=1)))

    assert rows(prev.W_V) == [r["TOKEN_HI"], r["TOKEN_LO"], r["TOKEN_HI2"], r["TOKEN_LO2"]]
    assert rows(prev.W_O.T) == r["COPIED"] and rows(prev.W_Q) == [
        r["PREV_HI"],
        r["PREV_LO"],
        r["ONE"],
    ]
    assert rows(prev.W_K) == [r["POS_HI"], r["POS_LO"], r["POS_HI2"], r["POS_LO2"]]
    assert rows(dup.W_V) == [r["POS_SCALED"]] and rows(dup.W_O.T) == [r["DUP"]]
    assert rows(ind.W_K) == [r["POS_SCALED"], *r["COPIED"]] and rows(ind.W_O.T) == [
        r["ANSWER_HI"],
        r["ANSWER_LO"],
    ]
    assert rows(ind.W_V) == [r["TOKEN_HI"], r["TOKEN_LO"]] and rows(ind.W_Q) == [
        r["TOKEN_HI"],
        r["TOKEN_LO"],
        r["ONE"],
    ]
    assert roles["parameters"] == two_layer_induction(64, 8).info["parameters"]
    assert one_layer_roles(16, 4)["decoder"]["kind"] == one_layer_induction(16, 4).decoder.kind


def test_boolean_roles_on_both_routes():
    F = parse_function("xor", 8)
    for D, H, route, d in (
        (2, 4, "factorization", 2),
        (4, 2, "additive-basis", 3),
        (1, 8, "factorization", 1),
    ):
        built = construct(F, 8, D, H)
        roles = construction_roles(built, 8)
        assert (roles["construction"], roles["dim"], roles["decoder"]["degree"]) == (route, d, D)
        assert [h["c"] for h in roles["heads"]] == [str(c) for c in range(1, H + 1)]
        terms = {tuple(t["exponent"]): fmpq(t["coefficient"]) for t in roles["decoder"]["terms"]}
        assert terms == built.readout.terms


@pytest.mark.parametrize("name", [*TWO_LAYER, "induction-1layer-n16-s4", "khop-8hop-n128-s4"])
def test_analyze_heads_recovers_the_roles_of_the_exported_files(exported, name):
    """Every induction construction's built roles, the k-hop construction's find^{2^t} heads
    included."""
    result, roles = exported[name]
    model = load_model(result.files[0])
    sizes = roles["sizes"]
    task = "khop" if "hops" in sizes else "induction"
    analysis = analyze_heads(
        model, task, "plain", sizes["n"], sizes["alphabet"], samples=16, hops=sizes.get("hops", 1)
    )
    assert [(h.layer, h.head, h.role) for h in analysis.heads] == [
        (h["layer"], h["head"], h["role"]) for h in roles["heads"]
    ]


def _same_transformer(a: Transformer, b: Transformer) -> None:
    assert np.array_equal(a.W_E, b.W_E) and np.array_equal(a.W_pos, b.W_pos) and a.mask == b.mask
    for la, lb in zip(a.layers, b.layers, strict=True):
        for ha, hb in zip(la.heads, lb.heads, strict=True):
            assert all(
                np.array_equal(getattr(ha, k), getattr(hb, k)) for k in ("W_Q", "W_K", "W_V", "W_O")
            )
    assert np.array_equal(a.decoder.W_U, b.decoder.W_U) and np.array_equal(
        a.decoder.b_U, b.decoder.b_U
    )


def test_files_read_back_as_the_constructions(exported):
    for name, (n, alphabet) in zip(TWO_LAYER, ((16, 4), (64, 8), (256, 16))):
        _same_transformer(load_model(exported[name][0].files[0]), two_layer_induction(n, alphabet))
    table = load_model(exported["induction-1layer-n16-s4"][0].files[0])
    built = one_layer_induction(16, 4)
    assert isinstance(table, OneLayerTable)
    assert all(
        np.array_equal(getattr(table, k), getattr(built, k)) for k in ("embed", "Q", "K", "V")
    )
    mm, ref = (
        load_minmax(exported["minmax-2head-m8-n8"][0].files[0]),
        build_construction(8, 8, 2, "sign", 0),
    )
    for ha, hb in zip(mm.layer.heads, ref.layer.heads, strict=True):
        assert np.array_equal(ha.scores, hb.scores) and np.array_equal(ha.values, hb.values)
    assert np.array_equal(mm.classifier_min.theta, ref.classifier_min.theta)
    assert np.array_equal(mm.classifier_max.theta, ref.classifier_max.theta)
    path = exported["xor-n8"][0].files[0]
    xor = load_boolean(path)
    assert [(h.w0, h.w1) for h in xor.layer.heads] == [(fmpq(1), fmpq(c + 1)) for c in range(1, 5)]
    assert check_model(
        path, "xor"
    ).certified  # the file names its n: `boolean check` reads it as it is


def test_export_cli_json_and_human(capsys, tmp_path):
    code, stdout, _ = run(
        capsys, "zoo", "export", "xor-n8", "--out", str(tmp_path / "a" / "b"), "--json"
    )
    result = json.loads(stdout)
    assert code == 0 and result["name"] == "xor-n8" and result["format"] == "headcount"
    assert result["out"] == str(tmp_path / "a" / "b") and result["transformer_lens"] == {}
    assert result["files"] == [
        str(tmp_path / "a" / "b" / f) for f in ("xor-n8.safetensors", "xor-n8.roles.json")
    ]
    assert result["certificate"]["certified"] is True
    code, stdout, _ = run(capsys, "zoo", "export", "minmax-2head-m8-n8", "--out", str(tmp_path))
    assert code == 0 and stdout.startswith(f"minmax-2head-m8-n8 (headcount) in {tmp_path}: 2 files")
    assert (
        "certified: True (headcount minmax certify --M 8 --n 8 --heads 2 --code sign --seed 0)"
        in stdout
    )


def test_refusals(capsys, tmp_path):
    a_file = tmp_path / "file"
    a_file.write_text("x")
    cases = [
        (("nope", "--out", str(tmp_path)), ("NAME 'nope' is not available", "xor-n8", NAMES[0])),
        (
            ("xor-n8", "--format", "tl", "--out", str(tmp_path)),
            ("'tl' is not available", "transformer-lens"),
        ),
        (
            ("xor-n8", "--format", "transformer-lens", "--out", str(tmp_path)),
            ("irrational", "--format headcount"),
        ),
        (
            ("induction-1layer-n16-s4", "--format", "transformer-lens", "--out", str(tmp_path)),
            ("table model", "non-linear readout"),
        ),
        (("xor-n8", "--out", str(a_file)), ("exists and is not a folder",)),
        (("xor-n8", "--out", ""), ("--out is empty",)),
        (("xor-n8", "--out", str(a_file / "below")), ("the folder cannot be made",)),
    ]
    for argv, needles in cases:
        refused(capsys, "zoo", "export", *argv, needles=needles)
    assert list(tmp_path.iterdir()) == [a_file]  # nothing written by a refused export


def test_the_library_names_parameters_and_the_caller_spells_the_command(tmp_path):
    """The library records the command that re-derives a certificate as words and parameters; the
    line in the roles file is spelled by the caller's `spell` (the CLI: its flags), and None without
    one."""
    command = zoo.Command(("minmax", "certify"), (("M", 8), ("random_seed", 0)))
    assert command.line(flag) == "headcount minmax certify --M 8 --random-model 0"
    assert zoo.export("xor-n8", "headcount", tmp_path / "python").certificate["command"] is None
    spelled = zoo.export("xor-n8", "headcount", tmp_path / "cli", spell=flag)
    assert (
        spelled.certificate["command"]
        == "headcount boolean construct --function xor --n 8 --degree 2 --heads 4"
    )
    roles = json.loads(Path(spelled.roles).read_text(encoding="utf-8"))
    assert roles["certificate"] == spelled.certificate
    with pytest.raises(InputError, match="^format 'tl' is not available") as err:
        zoo.export("xor-n8", "tl", tmp_path / "never")
    assert err.value.param == "format"
    with pytest.raises(
        InputError, match="^xor-n8 cannot be written as format transformer-lens: "
    ) as err:
        zoo.export("xor-n8", "transformer-lens", tmp_path / "never")
    assert str(err.value).endswith("; use format headcount") and err.value.param == "format"
    with pytest.raises(
        InputError, match="^NAME 'nope' is not available: use induction-2layer-n16-s4, "
    ) as err:
        zoo.export("nope", "headcount", tmp_path / "never")
    assert err.value.param is None  # the CLI's argument NAME: no flag to spell
    assert not (tmp_path / "never").exists()


def test_library_checks_before_building(monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(zoo, "two_layer_induction", lambda *args: calls.append(args))
    (tmp_path / "file").write_text("x")
    for fmt, out in (("x", tmp_path), ("headcount", tmp_path / "file")):
        with pytest.raises(InputError):
            zoo.export(NAMES[0], fmt, out)
    assert calls == []


# --- TransformerLens (the extra; skipped cleanly without it)
# -----------------------------------------


@pytest.fixture(scope="module")
def tl_io():
    pytest.importorskip("transformer_lens")
    io = pytest.importorskip("headcount.interop.transformer_lens_io")
    if not hasattr(io, "write_transformer_lens") or not hasattr(io, "read_transformer_lens"):
        pytest.skip("headcount.interop.transformer_lens_io has no write/read_transformer_lens yet")
    return io


def test_transformer_lens_two_layer(tl_io, tmp_path):
    result = zoo.export("induction-2layer-n16-s4", "transformer-lens", tmp_path)
    roles = json.loads(Path(result.roles).read_text(encoding="utf-8"))
    assert roles["format"] == "transformer-lens" and roles["files"] == ["induction-2layer-n16-s4"]
    assert list(result.transformer_lens) == ["induction-2layer-n16-s4"]
    back = tl_io.read_transformer_lens(tmp_path / "induction-2layer-n16-s4")
    _same_transformer(back, two_layer_induction(16, 4))
    assert all(Path(f).is_file() for f in result.files) and result.files[-1] == result.roles


def test_transformer_lens_minmax_two_weight_forms(tl_io, tmp_path):
    from headcount.core.certify.evaluate import predict
    from headcount.minmax.task import all_multisets

    result = zoo.export("minmax-2head-m8-n8", "transformer-lens", tmp_path)
    roles = json.loads(Path(result.roles).read_text(encoding="utf-8"))
    assert roles["files"] == ["minmax-2head-m8-n8-min", "minmax-2head-m8-n8-max"]
    assert roles["transformer_lens"]["weight_form"]["models"] == {
        "minmax-2head-m8-n8-min": "min",
        "minmax-2head-m8-n8-max": "max",
    }
    rng = np.random.default_rng(0)
    x = np.stack(
        [rng.permutation(row) for row in all_multisets(8, 8)]
    )  # every multiset, in any order
    for task, ref in (("min", x.min(axis=1)), ("max", x.max(axis=1))):
        folder = tmp_path / f"minmax-2head-m8-n8-{task}"
        back = tl_io.read_transformer_lens(folder)
        assert np.array_equal(predict(back, x - 1)[:, -1] + 1, ref)


@pytest.mark.slow  # the snippet imports TransformerLens's bridge: ~4 s on a busy 2-core machine
def test_transformer_lens_runs_the_min_max_layer(tl_io, tmp_path):
    """TransformerLens's own forward pass (the snippet, as a user runs it) answers min and max on
    every multiset of [8]^8, shuffled."""
    import torch

    from headcount.minmax.task import all_multisets

    zoo.export("minmax-2head-m8-n8", "transformer-lens", tmp_path)
    rng = np.random.default_rng(1)
    x = np.stack([rng.permutation(row) for row in all_multisets(8, 8)])
    for task, ref in (("min", x.min(axis=1)), ("max", x.max(axis=1))):
        bridge = runpy.run_path(str(tmp_path / f"minmax-2head-m8-n8-{task}" / "load.py"))["bridge"]
        with torch.no_grad():
            logits = bridge(torch.from_numpy(x - 1), return_type="logits")[:, -1]
        assert logits.dtype == torch.float64 and np.array_equal(logits.argmax(-1).numpy() + 1, ref)
