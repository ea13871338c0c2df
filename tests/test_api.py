"""The public Python API (issue 30): every name the top level and the scenario faces export, the
weights dict in and out, load/save of every model kind, certify's typed Certificate, predict,
analyze_heads and from_hf on a live transformers model and on its checkpoint."""

from __future__ import annotations

import dataclasses
import inspect
import runpy
from pathlib import Path

import numpy as np
import pytest

import headcount
from headcount.induction.certification import certify_induction

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "module", [headcount, headcount.induction, headcount.minmax, headcount.boolean]
)
def test_every_public_name_exists_and_is_documented(module):
    for name in module.__all__:
        value = getattr(module, name)
        if callable(value) or inspect.ismodule(value):
            assert inspect.getdoc(value), f"{module.__name__}.{name} has no docstring"
    assert (ROOT / "src" / "headcount" / "py.typed").exists()


@pytest.mark.parametrize(
    "module", [headcount, headcount.induction, headcount.minmax, headcount.boolean]
)
def test_every_public_function_is_typed(module):
    functions = [getattr(module, n) for n in module.__all__]
    functions = [f for f in functions if inspect.isfunction(f)]
    functions += [headcount.Transformer.from_weights, headcount.Transformer.weights]
    for f in functions:
        sig = inspect.signature(f)
        untyped = [p for p, q in sig.parameters.items() if q.annotation is inspect.Parameter.empty]
        assert untyped in ([], ["self"]), f"{f.__qualname__}: {untyped}"
        assert sig.return_annotation is not inspect.Signature.empty, f.__qualname__


def test_version_is_the_package_metadata_version():
    from importlib.metadata import version

    assert headcount.__version__ == version("headcount")


def _uniform_weights(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "W_E": rng.normal(size=(3, 5)),
        "W_pos": rng.normal(size=(6, 5)),
        "blocks.0.attn.W_Q": rng.normal(size=(2, 5, 4)),
        "blocks.0.attn.W_K": rng.normal(size=(2, 5, 4)),
        "blocks.0.attn.W_V": rng.normal(size=(2, 5, 4)),
        "blocks.0.attn.W_O": rng.normal(size=(2, 4, 5)),
        "blocks.0.attn.b_Q": rng.normal(size=(2, 4)),
        "blocks.0.attn.b_O": rng.normal(size=5),
        "blocks.0.ln1.w": rng.normal(size=5),
        "blocks.0.ln1.b": rng.normal(size=5),
        "blocks.0.ln2.w": rng.normal(size=5),
        "blocks.0.ln2.b": rng.normal(size=5),
        "blocks.0.mlp.W_in": rng.normal(size=(5, 7)),
        "blocks.0.mlp.b_in": rng.normal(size=7),
        "blocks.0.mlp.W_out": rng.normal(size=(7, 5)),
        "blocks.0.mlp.b_out": rng.normal(size=5),
        "blocks.1.attn.W_Q": rng.normal(size=(1, 5, 3)),
        "blocks.1.attn.W_K": rng.normal(size=(1, 5, 3)),
        "blocks.1.attn.W_V": rng.normal(size=(1, 5, 2)),
        "blocks.1.attn.W_O": rng.normal(size=(1, 2, 5)),
        "ln_final.w": rng.normal(size=5),
        "ln_final.b": rng.normal(size=5),
        "W_U": rng.normal(size=(5, 4)),
        "b_U": rng.normal(size=4),
    }


def test_from_weights_round_trip_is_bit_identical():
    w = _uniform_weights()
    options = {"attn_scale": [0.5, 0.25], "activation": "gelu_tanh", "ln_eps": 1e-6}
    model = headcount.Transformer.from_weights(w, readout="bottom-last", **options)
    assert model.heads_per_layer == [2, 1] and model.readout == "bottom-last"
    assert model.layers[0].heads[1].b_K is None and model.layers[0].heads[1].b_Q is not None
    again = model.weights()
    assert again.keys() == w.keys()
    assert all(again[k].tobytes() == w[k].tobytes() for k in w)
    rebuilt = headcount.Transformer.from_weights(again, **model.weight_options())
    assert rebuilt.weight_options() == model.weight_options()
    assert all(rebuilt.weights()[k].tobytes() == w[k].tobytes() for k in w)
    w["W_E"][0, 0] = 99.0  # the model holds copies
    assert model.W_E[0, 0] != 99.0


def test_weights_of_a_construction_pad_heads_exactly():
    model = headcount.induction.two_layer(6, 3)
    rebuilt = headcount.Transformer.from_weights(model.weights(), readout="bottom-last")
    tokens = headcount.induction.sample(6, 3, 64, seed=1)
    for row in tokens:
        a = headcount.predict(model, row, "fixed:12").outputs
        assert headcount.predict(rebuilt, row, "fixed:12").outputs == a
    table = headcount.induction.one_layer(6, 3)  # its readout is no linear unembedding
    odd = dataclasses.replace(model, decoder=table.decoder)
    assert odd.readout is None
    with pytest.raises(ValueError, match="not a linear unembedding"):
        odd.weights()


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda w: w.pop("W_U"), "W_U is missing"),
        (lambda w: w.update({"blocks.0.attn.W_X": np.zeros(3)}), "unknown key"),
        (lambda w: w.update({"blocks.3.attn.W_Q": np.zeros((1, 5, 3))}), "numbered"),
        (lambda w: w.update({"W_E": np.full((3, 5), np.nan)}), "NaN"),
        (lambda w: w.update({"W_E": "text"}), "not a numeric array"),
        (lambda w: w.update({"blocks.1.attn.W_K": np.zeros((2, 5, 3))}), "blocks.1.attn.W_K"),
        (lambda w: w.update({"W_U": np.zeros((5, 7))}), "bottom-last"),
        (lambda w: w.update({"blocks.1.attn.W_O": np.zeros((1, 3, 5))}), "block 1"),
    ],
)
def test_from_weights_refuses_with_one_line(change, message):
    w = _uniform_weights()
    change(w)
    with pytest.raises(headcount.InputError, match=message) as err:
        headcount.Transformer.from_weights(w, readout="bottom-last")
    assert "\n" not in str(err.value)


def test_from_weights_takes_a_vocabulary_map_readout():
    w = _uniform_weights()
    w["W_U"], w["b_U"] = np.random.default_rng(1).normal(size=(5, 9)), np.zeros(9)
    model = headcount.Transformer.from_weights(w, readout={"none": 8, "symbols": [4, 5, 6]})
    assert model.readout == {"symbols": [4, 5, 6], "none": 8}
    with pytest.raises(headcount.InputError, match="readout must be"):
        headcount.Transformer.from_weights(w, readout="last")


def test_load_and_save_every_model_kind(tmp_path):
    models = {
        "two": headcount.induction.two_layer(6, 3),
        "one": headcount.induction.one_layer(6, 3),
        "minmax": headcount.minmax.construct(8, 4, 2),
        "boolean": headcount.load(_boolean_file(tmp_path)),
    }
    for name, model in models.items():
        path = tmp_path / f"{name}.safetensors"
        headcount.save(model, path)
        back = headcount.load(path)
        assert type(back) is type(model), name
    with pytest.raises(headcount.InputError):
        headcount.save(object(), tmp_path / "x.safetensors")
    (tmp_path / "junk.safetensors").write_bytes(b"\x00" * 16)
    with pytest.raises(headcount.InputError):
        headcount.load(tmp_path / "junk.safetensors")


def _boolean_file(tmp_path):
    out = tmp_path / "xor.safetensors"
    headcount.boolean.construct("xor", 4, 2, 2, out=out)
    return out


def test_certify_returns_the_typed_certificate():
    model = headcount.induction.two_layer(6, 3)
    cert = headcount.certify(model, "induction", n=6, alphabet=3)
    assert cert.certified and cert.proven and cert.scope == "exhaustive" and cert.errors == 0
    assert cert.counterexamples == () and all(r.p < cert.precision_bits for r in cert.rejected)
    assert repr(cert).startswith("Certificate(certified=True, task='induction', n=6, alphabet=3")
    plain = certify_induction(model, 6, 3).to_json()
    ours = cert.to_json()
    assert {k: v for k, v in ours.items() if k != "seconds"} == {
        k: v for k, v in plain.items() if k != "seconds"
    }


def test_certify_on_a_ray_cluster_is_the_local_certificate():
    pytest.importorskip("ray")
    model = headcount.induction.two_layer(8, 4)  # 65,536 inputs: two chunks, one a Ray task
    local = headcount.certify(model, n=8, alphabet=4).to_json()
    spread = headcount.certify(model, n=8, alphabet=4, executor="ray", workers=1).to_json()
    assert {k: v for k, v in spread.items() if k != "seconds"} == {
        k: v for k, v in local.items() if k != "seconds"
    }


def test_certify_of_a_broken_model_confirms_its_counterexample():
    w = headcount.induction.two_layer(6, 3).weights()
    w["blocks.1.attn.W_O"] = -w["blocks.1.attn.W_O"]
    broken = headcount.Transformer.from_weights(w, readout="bottom-last")
    cert = headcount.certify(broken, n=6, alphabet=3)
    assert not cert.certified and cert.errors > 0 and len(cert.counterexamples) == 1
    found = cert.counterexamples[0]
    got = headcount.predict(broken, found.input, "float64").outputs_text[found.position - 1]
    want = headcount.induction.solve(np.array(found.input)).outputs_text[found.position - 1]
    assert (got, want) == (found.model_output, found.expected) and got != want


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"task": "sorting"}, "not one of"),
        ({"task": "induction", "hops": 2}, "task='khop'"),
        ({"n": 100}, "n ≤ 6"),
        ({"executor": "slurm"}, "use local or ray"),
        ({"workers": 2}, "for the Ray executor"),
    ],
)
def test_certify_refuses_bad_requests(kwargs, message):
    args = {"task": "induction", "n": 6, "alphabet": 3} | kwargs
    task = args.pop("task")
    with pytest.raises(headcount.InputError, match=message):
        headcount.certify(headcount.induction.two_layer(6, 3), task, **args)
    with pytest.raises(headcount.InputError, match="Transformer"):
        headcount.certify(headcount.minmax.construct(8, 4, 2), n=6, alphabet=3)


def test_khop_certificate():
    model = headcount.induction.khop(8, 3, 2)
    cert = headcount.certify(model, "khop", n=8, alphabet=3, hops=2, samples=4)
    assert cert.certified and cert.hops == 2 and "hops=2" in repr(cert)


def test_sample_is_seeded_and_bounded():
    a = headcount.induction.sample(12, 3, 5, family="latest_match_far_back", seed=7)
    assert a.shape == (5, 12) and a.dtype == np.int64 and a.max() < 3
    assert np.array_equal(
        a, headcount.induction.sample(12, 3, 5, family="latest_match_far_back", seed=7)
    )
    for kwargs, message in (
        ({"family": "nope"}, "family"),
        ({"count": 0}, "count"),
        ({"count": 10**12}, "memory"),
    ):
        with pytest.raises(headcount.InputError, match=message):
            headcount.induction.sample(100, 3, **kwargs)


def test_predict_takes_text_or_tokens():
    model = headcount.induction.two_layer(6, 3)
    a = headcount.predict(model, "2 0 1 2 0", "fixed:12")
    b = headcount.predict(model, [2, 0, 1, 2, 0], "fixed:12")
    assert a == b and a.outputs_text == ["⊥", "⊥", "⊥", "0", "1"]
    assert headcount.BOTTOM in a.outputs
    for bad in ([], [[1, 2]], [-1, 0], [0.5, 1.0]):
        with pytest.raises(headcount.InputError):
            headcount.predict(model, bad)


def test_analyze_heads_names_the_constructions_roles():
    model = headcount.induction.two_layer(8, 3)
    analysis = headcount.analyze_heads(model, "induction", n=8, alphabet=3, samples=32)
    roles = [h.role for h in analysis.heads]
    assert "induction" in " ".join(roles)


def _tiny_gpt2():
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        n_layer=2, n_head=2, n_embd=8, vocab_size=5, n_positions=8, n_inner=16
    )
    return transformers.GPT2LMHeadModel(config).eval()


def test_from_hf_reads_a_live_model_as_its_checkpoint(tmp_path):
    hf = _tiny_gpt2()
    live = headcount.from_hf(hf)
    hf.save_pretrained(tmp_path / "ckpt", safe_serialization=True)
    saved = headcount.from_hf(tmp_path / "ckpt")
    assert live.heads_per_layer == [2, 2] and live.readout == saved.readout
    w1, w2 = live.weights(), saved.weights()
    assert w1.keys() == w2.keys() and all(w1[k].tobytes() == w2[k].tobytes() for k in w1)
    import torch

    tokens = [0, 1, 2, 0, 1]
    with torch.no_grad():
        logits = hf(torch.tensor([tokens])).logits[0].double().numpy()
    ours = headcount.predict(live, tokens, "float64").outputs
    assert list(ours) == [int(i) for i in logits.argmax(-1)]
    # read as the task (S = 4): ids 0..3 are the symbols, id 4 is ⊥ (the default vocabulary map)
    labelled = headcount.predict(live, tokens, "float64", alphabet=4)
    assert list(labelled.outputs) == [headcount.BOTTOM if t == 4 else t for t in ours]
    with pytest.raises(headcount.InputError, match="transformers model"):
        headcount.from_hf(object())


def test_from_hf_reads_a_live_llama_as_its_checkpoint(tmp_path):
    transformers = pytest.importorskip("transformers")
    import torch

    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=6, hidden_size=8, intermediate_size=12, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=16,
    )  # fmt: skip
    hf = transformers.LlamaForCausalLM(config).eval()
    live = headcount.from_hf(hf, n_ctx=8)
    hf.save_pretrained(tmp_path / "ckpt")
    saved = headcount.from_hf(tmp_path / "ckpt", n_ctx=8)
    assert live.n_ctx == saved.n_ctx == 8 and {"rotary", "rmsnorm"} <= set(live.extensions)
    tokens = [0, 1, 2, 0, 1, 5]
    with torch.no_grad():
        logits = hf(torch.tensor([tokens])).logits[0].numpy()
    for model in (live, saved):
        assert list(headcount.predict(model, tokens, "float64").outputs) == list(logits.argmax(-1))


def test_the_smoke_script_runs_in_process():
    pytest.importorskip("transformer_lens")
    runpy.run_path(str(ROOT / "tests" / "api_smoke.py"), run_name="__main__")
