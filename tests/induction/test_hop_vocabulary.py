"""The k-hop paper's hop vocabulary (issue 35, item 5): hop count 0 as a task (hop_0(σ)_i = σ_i),
the vocabulary map's "hops" as an object {"k": id} or a list with "hops_from", the bare list refused
with both readings named, and `evaluate --hops 0..16` on an imported checkpoint in the paper's
layout (hop ids 0..16, symbols 17..20, none 21, blank 22)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from headcount.common.errors import InputError
from headcount.core.certify.evaluate import emulate
from headcount.core.model import bind_task
from headcount.core.model.files import load_model
from headcount.core.model.symbols import BOTTOM, OTHER
from headcount.core.model.vocab import VocabMap
from headcount.induction import layouts, task
from tests.cli_run import refused, run
from tests.core.gpt2_checkpoints import config, state_dict, write_folder, write_json
from tests.core.gpt2_models import gpt2_like

PAPER = {"symbols": [17, 18, 19, 20], "hops": list(range(17)), "none": 21, "blank": 22}


def test_hop_zero_is_the_input_itself():
    sigma = task.no_adjacent_repeats(np.random.default_rng(0), 5, 9, 4)
    assert np.array_equal(task.induction_targets(sigma, 0), sigma)
    assert task.induction_targets(sigma[0], 0).tolist() == sigma[0].tolist()
    assert task.induction_targets_literal(sigma[1].tolist(), 0) == sigma[1].tolist()
    with pytest.raises(InputError, match="hops must be an integer ≥ 0, got -1"):
        task.induction_targets(sigma, -1)
    with pytest.raises(InputError, match="positive integer"):
        task.effective_hops(0, 9)  # the constructions and certificates still start at 1


def test_the_paper_layout_reads_as_objects_and_lists_from_zero():
    from_list = VocabMap.from_json(PAPER | {"hops_from": 0})
    as_object = VocabMap.from_json(PAPER | {"hops": {str(k): k for k in range(17)}})
    assert from_list == as_object
    assert from_list.to_json()["hops"] == {str(k): k for k in range(17)}
    assert VocabMap.from_json(from_list.to_json()) == from_list
    # symbols 0..3, hop counts 1..16, then hop count 0 (bind_task's order)
    assert from_list.input_ids(4, 16, zero=True).tolist() == [17, 18, 19, 20, *range(1, 17), 0]
    from_one = VocabMap.from_json({"hops": [30, 31], "hops_from": 1})
    assert from_one.input_ids(2, 2).tolist() == [0, 1, 30, 31]
    with pytest.raises(InputError, match="no token for hop count 0; it names hop counts 1..2"):
        from_one.input_ids(2, 2, zero=True)
    with pytest.raises(InputError, match="hop count 0 has no token in headcount's own layout"):
        VocabMap().input_ids(2, 1, zero=True)


@pytest.mark.parametrize(
    "obj, needles",
    [
        ({"hops": [5, 6]}, ("ambiguous", '"hops_from": 0', '"hops_from": 1', '{"0": id')),
        ({"hops": [5, 6], "hops_from": 2}, ("'hops_from' must be 0 or 1, got '2'",)),
        ({"hops": [5, 6], "hops_from": True}, ("'hops_from' must be 0 or 1",)),
        ({"hops": [5, 6], "hops_from": "0"}, ("'hops_from' must be 0 or 1",)),
        ({"hops": [5, 6], "hops_from": 0.0}, ("'hops_from' must be 0 or 1",)),
        ({"hops_from": 0}, ("no 'hops'",)),
        ({"hops": {"0": 5}, "hops_from": 0}, ("an object names each hop count itself",)),
        ({"hops": {"01": 5}}, ("keys are hop counts", "'01'")),
        ({"hops": {"-1": 5}}, ("keys are hop counts",)),
        ({"hops": {"one": 5}}, ("keys are hop counts",)),
        ({"hops": {"0": -5}}, ("token id 0 ≤ id < 2^31",)),
        ({"hops": "0..16"}, ("must be an object",)),
        ({"symbols": [1, 2], "hops": {"0": 2}}, ("distinct",)),
    ],
)
def test_bad_hop_maps_are_refused(obj, needles):
    with pytest.raises(InputError) as err:
        VocabMap.from_json(obj)
    for needle in needles:
        assert needle in str(err.value), (needle, str(err.value))


def test_own_layout_models_have_no_hop_zero_token():
    model = gpt2_like(1, vocab=8, readout="linear")
    assert bind_task(model, 3, 2) is model
    with pytest.raises(InputError, match="hop count 0 has no token"):
        bind_task(model, 3, 2, zero=True)


@pytest.fixture
def paper_checkpoint(tmp_path, capsys):
    """An imported GPT-2 checkpoint in the paper's vocabulary (23 ids), n_ctx 9."""
    folder = write_folder(
        tmp_path / "ckpt",
        state_dict(3, vocab=23, n_ctx=9),
        config(n_layer=2, n_embd=8, vocab_size=23, n_positions=9),
    )
    vmap = write_json(tmp_path / "vocab.json", PAPER | {"hops_from": 0})
    out = tmp_path / "paper.safetensors"
    code, _, err = run(
        capsys, "import", "gpt2", str(folder), "--out", str(out), "--vocab-map", str(vmap)
    )
    assert code == 0, err
    return out


def _by_hand(model, sigma: np.ndarray, hop_id: int, k: int) -> int:
    """Errors (answers that exist) of the raw imported model, read in its own ids."""
    ids = np.concatenate([np.full((len(sigma), 1), hop_id), 17 + sigma], axis=1)
    raw = emulate(model, ids)[:, 1:]
    got = np.where(raw == 21, BOTTOM, np.where((raw >= 17) & (raw <= 20), raw - 17, OTHER))
    target = task.induction_targets(sigma, k)
    return int(((got != target) & (target != BOTTOM)).sum())


def test_evaluate_hops_zero_to_sixteen_on_the_paper_vocabulary(paper_checkpoint, capsys):
    code, out, err = run(
        capsys, "evaluate", "--model", str(paper_checkpoint), "--task", "khop", "--n", "8",
        "--alphabet", "4", "--hops", "0..16", "--samples", "64", "--json",
    )  # fmt: skip
    assert code == 0, err
    per_hop = json.loads(out)["per_hop"]
    assert [h["hops"] for h in per_hop] == list(range(17))
    assert per_hop[0]["positions"] == 64 * 8 and per_hop[0]["positions_none"] == 0
    model = load_model(paper_checkpoint)
    sigma = layouts.task_characters("khop", 64, 8, 4, layouts.EVAL_SEED)
    for k in (0, 1, 5, 16):  # the hop token at position 0 is the map's id of hop count k
        assert per_hop[k]["errors"] == _by_hand(model, sigma, k, k), k


def test_a_bare_hops_list_is_refused_at_import(tmp_path, capsys):
    folder = write_folder(tmp_path / "ckpt", state_dict(0, vocab=23), config(n_layer=2, n_embd=8))
    vmap = write_json(tmp_path / "vocab.json", PAPER)
    out = tmp_path / "m.safetensors"
    line = refused(
        capsys, "import", "gpt2", str(folder), "--out", str(out), "--vocab-map", str(vmap),
        needles=("ambiguous", "hops_from"),
    )  # fmt: skip
    assert "--vocab-map" in line or "vocabulary map" in line
    assert not out.exists()


def test_train_hop_zero_and_evaluate_reproduces_its_accuracy(tmp_path, capsys):
    """`train induction --hops 2 --hop-zero`: hop counts 0..2 are drawn, hop 0's token is S + 2;
    `evaluate --hops 0..2` on the written model gives the run's own accuracy_by_hop, hop 0 too."""
    path = tmp_path / "k.safetensors"
    argv = ["--layers", "2", "--dim", "16", "--n", "8", "--alphabet", "4", "--hops", "2"]
    code, out, err = run(
        capsys, "train", "induction", *argv, "--hop-zero", "--steps", "150", "--lr", "0.01",
        "--out", str(path), "--json",
    )  # fmt: skip
    assert code == 0, err
    trained = json.loads(out)
    assert trained["hop_zero"] is True and trained["task"] == "khop"
    assert sorted(trained["accuracy_by_hop"]) == ["0", "1", "2"]
    model = load_model(path)
    assert model.alphabet == 4 + 2 + 1 and model.info["hop_zero_token"] == 6
    code, out, err = run(
        capsys, "evaluate", "--model", str(path), "--task", "khop", "--n", "8", "--alphabet", "4",
        "--hops", "0..2", "--json",
    )  # fmt: skip
    assert code == 0, err
    per_hop = {h["hops"]: h for h in json.loads(out)["per_hop"]}
    for k, accuracy in trained["accuracy_by_hop"].items():
        assert per_hop[int(k)]["error"] == 1 - accuracy  # the same inputs, the same float
    assert 0 < per_hop[1]["error"] < 1  # partly trained: the comparison is not trivial
    # hop 1 alone binds the same tokens; a hop count past the trained ones would read hop 0's token
    refused(
        capsys, "evaluate", "--model", str(path), "--task", "khop", "--n", "8", "--alphabet", "4",
        "--hops", "3", needles=("hop counts 1..2 (and 0); hop count 3 needs more",),
    )  # fmt: skip
    bad = layouts.bind_layout(model, "hop-prefix", 8, 4, 1, zero=True)
    assert np.array_equal(bad.W_E, model.W_E[[0, 1, 2, 3, 4, 6]])  # hop 0 after hop 1's token


def test_hop_zero_needs_the_hop_token(capsys):
    from headcount.learn.train import train_induction

    with pytest.raises(InputError, match="needs the hop token"):
        train_induction(hops=1, hop_zero=True, hop_token=False, steps=0)
    with pytest.raises(InputError, match="must be true or false"):
        train_induction(hops=2, hop_zero="yes", steps=0)
