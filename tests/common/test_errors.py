"""InputError names the parameter at fault (issue 29, point 5): the library's message reads with the
Python name, the command line's with the flag, and the marks survive a pickle and a re-raise."""

from __future__ import annotations

import pickle

import pytest

import headcount.cli as cli
from headcount.cli.common import FLAGS, flag
from headcount.common.errors import InputError, param, plain
from headcount.common.validate import check_choice, check_int


def test_python_reads_the_name_and_the_cli_the_flag():
    err = InputError(f"{param('max_hops')} must be ≥ 1 with {param('layout')} hop-prefix")
    assert str(err) == "max_hops must be ≥ 1 with layout hop-prefix"
    assert err.param == "max_hops" and err.params == ("max_hops", "layout")
    assert err.render(flag) == "--max-hops must be ≥ 1 with --layout hop-prefix"


def test_a_message_without_marks_is_unchanged_and_names_no_parameter():
    err = InputError("model.safetensors is not a headcount model")
    assert str(err) == err.render(flag) == "model.safetensors is not a headcount model"
    assert err.param is None


def test_an_explicit_param_wins_and_a_legacy_flag_passes_through():
    assert InputError("the file is empty", param="model").param == "model"
    assert param("--n") == "--n" and param("n") != "n" and plain(param("n")) == "n"


def test_the_checks_mark_their_parameter():
    with pytest.raises(InputError, match=r"^n must be ≥ 2, got 1$") as info:
        check_int("n", 1, 2)
    assert info.value.param == "n" and info.value.render(flag) == "--n must be ≥ 2, got 1"
    with pytest.raises(InputError) as info:
        check_choice("backend", "jax", ("numpy", "torch"))
    assert info.value.render(flag) == "--backend 'jax' is not available: use numpy or torch"


def test_marks_survive_a_pickle_and_a_re_raise():
    err = pickle.loads(pickle.dumps(InputError(f"{param('samples')} must be ≥ 1", param="samples")))
    assert err.param == "samples" and err.render(flag) == "--samples must be ≥ 1"
    wrapped = InputError(f"INDEX reduction: {err.raw}")
    assert wrapped.render(flag) == "INDEX reduction: --samples must be ≥ 1"


def test_the_cli_boundary_prints_the_flag(capsys, monkeypatch):
    monkeypatch.setitem(FLAGS, "seed", "--random-seed")
    assert flag("seed") == "--random-seed" and flag("max_memory") == "--max-memory"

    def refuse(*args, **kwargs):
        raise InputError(f"{param('seed')} must be ≥ 0, got -1")

    monkeypatch.setattr(cli, "app", refuse)
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["anything"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip() == "error: --random-seed must be ≥ 0, got -1"
