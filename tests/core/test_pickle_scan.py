"""The scan of a state dict's pickle before torch.load (interop.pickle_scan,
interop.checkpoints.open_torch): the two key bombs a reviewer found (a tuple key nested 150,000
deep: a segfault; a key of 2**40 shared tuples: a hang) refused through the CLI within a CPU budget,
each refusal rule on its own, and genuine torch.save checkpoints (transformers' GPT-2, tied weights,
OrderedDict metadata, pickle protocols 2 to 5) passing."""

from __future__ import annotations

import io
import json
import pickle
import random
import resource
import subprocess
import sys
import time
import zipfile
from collections import OrderedDict
from pathlib import Path

import pytest

from headcount.common.errors import InputError
from headcount.interop import checkpoints
from headcount.interop.gpt2 import import_gpt2
from headcount.interop.pickle_scan import MAX_DEPTH, check_state_dict_pickle
from tests.core.gpt2_checkpoints import (
    config,
    deep_key_pickle,
    shared_key_pickle,
    state_dict,
    write_key_bombs,
)

torch = pytest.importorskip("torch")

CPU_LIMIT_S = 20
NAME = "'sd.bin'"


def _limited(cpu_s: int):
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 5))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a segfault leaves no core file behind
        hard = resource.getrlimit(resource.RLIMIT_STACK)[
            1
        ]  # Linux's usual 8 MiB C stack, even where
        stack = 8 << 20 if hard == resource.RLIM_INFINITY else min(8 << 20, hard)  # it is unlimited
        resource.setrlimit(resource.RLIMIT_STACK, (stack, hard))

    return limit


def _refusal(data: bytes) -> str:
    with pytest.raises(InputError) as err:
        check_state_dict_pickle(data, NAME)
    message = str(err.value)
    assert message.startswith(f"{NAME}: ") and "\n" not in message, message
    return message


# --- the reviewer's two files, through the command
# ----------------------------------------------------


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_CPU in a child: Linux")
@pytest.mark.parametrize("bomb", ["deep-key", "shared-key"])
def test_key_bombs_are_refused_by_the_command(tmp_path, bomb):
    path = write_key_bombs(tmp_path / "bombs")[bomb]
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(config()), encoding="utf-8")
    argv = [
        "import",
        "gpt2",
        str(path),
        "--config",
        str(cfg),
        "--out",
        str(tmp_path / "m.safetensors"),
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "headcount.cli", *argv, "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=_limited(CPU_LIMIT_S),
        cwd=tmp_path,
    )
    assert (proc.returncode, proc.stdout) == (2, ""), (proc.returncode, proc.stderr[-2000:])
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert f"{bomb}.bin" in lines[0] and "its pickle" in lines[0], lines[0]
    assert not (tmp_path / "m.safetensors").exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_CPU in a child: Linux")
def test_the_bombs_really_hurt_torch_load_unscanned(tmp_path):
    """Guards the recipes: torch.load alone dies on each (a crash, or the CPU limit), so the test
    above tests the scan, not a file torch would have read anyway."""
    paths = write_key_bombs(tmp_path)
    code = "import sys, torch; torch.load(sys.argv[1], map_location='cpu', weights_only=True)"
    for path in paths.values():
        proc = subprocess.run(
            [sys.executable, "-c", code, str(path)],
            capture_output=True,
            timeout=120,
            preexec_fn=_limited(3),
        )
        assert proc.returncode < 0, (
            path.name,
            proc.returncode,
            proc.stderr[-500:],
        )  # killed by a signal


def test_key_bombs_are_refused_at_once():
    for data, why in (
        (deep_key_pickle(), "nests deeper than"),
        (shared_key_pickle(), "expands to over"),
    ):
        start = time.process_time()
        assert why in _refusal(data)
        assert time.process_time() - start < 1.0
    assert "nests deeper" in _refusal(
        deep_key_pickle(2_000_000)
    )  # 2 MB: still linear, still refused
    # shallow versions keep the one rule they still break: the key is not a string
    assert "dict key that is not a string" in _refusal(deep_key_pickle(3))
    assert "dict key that is not a string" in _refusal(shared_key_pickle(3))


# --- each rule
# --------------------------------------------------------------------------------------


def _nested(depth: int) -> list:
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("value", "protocol", "needle"),
    [
        ({(1, 2): 0}, 2, "dict key that is not a string"),  # SETITEM
        ({"a": 1, 2: 3}, 2, "dict key that is not a string"),  # SETITEMS
        ({"a": {None: 1}}, 4, "dict key that is not a string"),  # a nested dict's key too
        ({"a": {1.5: 1, "b": 2}}, 5, "dict key that is not a string"),
        ({"a": _nested(MAX_DEPTH + 1)}, 2, f"nests deeper than {MAX_DEPTH}"),
        ({"a": b"bytes"}, 3, "opcode SHORT_BINBYTES"),  # bytes: not in a state dict
    ],
)
def test_each_rule_refuses(value, protocol, needle):
    assert needle in _refusal(pickle.dumps(value, protocol))


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_nesting_up_to_the_bound_passes(protocol):
    check_state_dict_pickle(
        pickle.dumps({"a": _nested(MAX_DEPTH - 1), "b": (1, 2.5, None)}, protocol), NAME
    )


@pytest.mark.parametrize(
    ("value", "protocol"),
    [({1, 2}, 4), (frozenset({1}), 4), ({"a": {1}}, 4), ({"a": frozenset()}, 5)],
)
def test_sets_are_refused(value, protocol):
    assert "builds a set" in _refusal(pickle.dumps(value, protocol))


def test_memo_expansion_is_bounded_by_the_pickle_length():
    """A value (not a key) of shared tuples: fine while small, refused once it expands past the
    bound."""
    small = b"\x80\x02}X\x01\x00\x00\x00aNq\x00" + b"h\x00\x86q\x00" * 5 + b"s."
    check_state_dict_pickle(small, NAME)
    big = small.replace(b"h\x00\x86q\x00" * 5, b"h\x00\x86q\x00" * 30)
    assert "expands to over" in _refusal(big)


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (b"\x80\x02h\x05.", "memo entry 5, which was never stored"),
        (b"\x80\x02j\x00\x01\x00\x00.", "memo entry 256, which was never stored"),
        (pickle.dumps({"a": 1}, protocol=0), "opcode"),  # text opcodes (DICT, PUT, INT)
        (b"\x80\x02(K\x01K\x02d.", "opcode DICT"),  # protocol 0's dict from a MARK
        (
            b"\x80\x02cos\nsystem\nX\x02\x00\x00\x00lsR.",
            "",
        ),  # passes the scan: torch refuses the global
        (b"\x80\x02cbuiltins\nobject\n)\x81.", ""),  # NEWOBJ: likewise torch's to judge
        (b"\x80\x02cbuiltins\nobject\nU\x01x\x85\x81.", "opcode SHORT_BINSTRING"),
        (b"\x80\x02}(X\x01\x00\x00\x00au.", "a dict key without a value"),
        (b"\x80\x02t.", "MARK never set"),
        (b"\x80\x02\x85.", "pops an empty stack"),
        (b"\x80\x02(N\x86.", "pops an empty stack"),  # TUPLE2 reaching below a MARK
        (b"\x80\x02(N.", "MARK never closed"),
        (b"\x80\x02q\x00.", "nothing on the stack"),
        (b"\x80\x02}", "malformed"),  # no STOP
        (b"\x80\x02\xff.", "malformed"),  # no such opcode
        (b"\x80\x02X\xff\xff\xff\x7fab.", "malformed"),  # a string longer than the pickle
        (b"", "malformed"),
    ],
)
def test_corrupt_and_foreign_pickles(data, needle):
    if not needle:
        check_state_dict_pickle(data, NAME)
    else:
        assert needle in _refusal(data)


def test_mutated_torch_pickles_raise_only_input_errors():
    """Random byte changes to a real torch.save pickle: the scan passes or refuses, nothing else."""
    buffer = io.BytesIO()
    torch.save({k: torch.from_numpy(v) for k, v in state_dict(layers=1).items()}, buffer)
    data = zipfile.ZipFile(buffer).read("archive/data.pkl")
    rng = random.Random(5)
    for _ in range(2000):
        mutated = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            mutated[rng.randrange(len(mutated))] = rng.randrange(256)
        try:
            check_state_dict_pickle(bytes(mutated[: rng.randint(1, len(mutated))]), NAME)
        except InputError as err:
            assert "\n" not in str(err)


# --- genuine checkpoints
# ----------------------------------------------------------------------------


def _gpt2_model():
    transformers = pytest.importorskip("transformers")
    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(
        n_layer=2, n_head=2, n_embd=8, vocab_size=11, n_positions=6, attn_implementation="eager"
    )
    return transformers.GPT2LMHeadModel(cfg).eval()


def _pickle_of(path: Path) -> bytes:
    with zipfile.ZipFile(path) as archive:
        (entry,) = [n for n in archive.namelist() if n.endswith("/data.pkl")]
        return archive.read(entry)


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_transformers_state_dicts_pass(tmp_path, protocol):
    model = _gpt2_model()
    state = model.state_dict()
    assert isinstance(state, OrderedDict) and hasattr(state, "_metadata")  # pickled with BUILD
    assert state["lm_head.weight"].data_ptr() == state["transformer.wte.weight"].data_ptr()  # tied
    path = tmp_path / "sd.bin"
    torch.save(state, path, pickle_protocol=protocol)
    check_state_dict_pickle(_pickle_of(path), NAME)
    model.config.to_json_file(tmp_path / "config.json")
    try:
        result = import_gpt2(path, tmp_path / "m.safetensors", config=tmp_path / "config.json")
    except InputError as err:  # torch.load(weights_only=True) reads protocols 2 and 3 only, so far
        assert protocol >= 4 and "torch.load(weights_only=True) cannot read it" in str(err), err
    else:
        assert result.layers == 2 and result.prefix == "transformer."


def test_save_pretrained_bin_folder_imports(tmp_path):
    model = _gpt2_model()
    folder = tmp_path / "ckpt"
    model.save_pretrained(folder, safe_serialization=False)
    if not (
        folder / "pytorch_model.bin"
    ).exists():  # transformers ≥ 5 writes safetensors regardless
        (folder / "model.safetensors").unlink()
        torch.save(model.state_dict(), folder / "pytorch_model.bin")
    check_state_dict_pickle(_pickle_of(folder / "pytorch_model.bin"), NAME)
    result = import_gpt2(folder, tmp_path / "m.safetensors")
    assert result.source.endswith("pytorch_model.bin") and result.layers == 2


def test_views_shared_storage_and_many_entries_pass(tmp_path):
    """Views of one storage, a tensor under two names, scalars and > 1,000 entries (SETITEMS
    batches)."""
    flat = torch.arange(24.0)
    state = {"a": flat[:12].view(3, 4), "b": flat[12:], "c": flat, "n": torch.tensor(1.5)}
    state |= {"alias": state["a"]} | {f"x.{i}": torch.zeros(1) for i in range(2500)}
    buffer = io.BytesIO()
    torch.save(state, buffer)
    check_state_dict_pickle(zipfile.ZipFile(buffer).read("archive/data.pkl"), NAME)
    path = tmp_path / "numpy.pt"
    torch.save({k: torch.from_numpy(v) for k, v in state_dict().items()}, path)
    listed = checkpoints.open_torch(str(path)).listed
    assert listed["wte.weight"] == ((11, 8), "F32")


# --- open_torch around the scan
# ------------------------------------------------------------------------


def test_non_string_keys_get_their_own_message(tmp_path, monkeypatch):
    """Were a non-string key to reach the listing (the scan refuses them first), it is named as a
    key."""
    path = tmp_path / "int-key.pt"
    torch.save({1: torch.zeros(2)}, path)
    with pytest.raises(InputError, match="dict key that is not a string"):
        checkpoints.open_torch(str(path))
    monkeypatch.setattr(checkpoints, "check_state_dict_pickle", lambda data, name: None)
    with pytest.raises(
        InputError, match=r"key 1 is a int, not a name: a state dict maps names to tensors"
    ):
        checkpoints.open_torch(str(path))


def test_the_pickle_torch_reads_is_the_one_scanned(tmp_path):
    """Two data.pkl entries differing in case (torch's zip reader matches names in any case), or a
    pickle outside the archive's folder: refused before anything is unpickled."""
    benign = pickle.dumps({"a": 1}, protocol=2)
    twice = tmp_path / "twice.pt"
    with zipfile.ZipFile(twice, "w") as archive:
        archive.writestr("archive/data.pkl", benign)
        archive.writestr("archive/DATA.PKL", deep_key_pickle())
        archive.writestr("archive/version", b"3\n")
    with pytest.raises(InputError, match="holds 2 pickles"):
        checkpoints.open_torch(str(twice))
    apart = tmp_path / "apart.pt"
    with zipfile.ZipFile(apart, "w") as archive:
        archive.writestr("archive/version", b"3\n")
        archive.writestr("other/data.pkl", benign)
    with pytest.raises(InputError, match="torch.save writes"):
        checkpoints.open_torch(str(apart))


def test_the_file_is_read_once_so_a_swap_after_the_scan_changes_nothing(tmp_path, monkeypatch):
    """The bytes scanned are the bytes torch.load reads: a file replaced right after the scan (a
    race: it could be a key bomb) is never unpickled; the state dict read is the one that was
    scanned."""
    path, other = tmp_path / "sd.pt", tmp_path / "other.pt"
    torch.save({k: torch.from_numpy(v) for k, v in state_dict().items()}, path)
    torch.save({"other": torch.zeros(2)}, other)
    scan = checkpoints.check_state_dict_pickle

    def scan_then_swap(data: bytes, name: str) -> None:
        scan(data, name)
        path.write_bytes(other.read_bytes())

    monkeypatch.setattr(checkpoints, "check_state_dict_pickle", scan_then_swap)
    assert checkpoints.open_torch(str(path)).listed["wte.weight"] == ((11, 8), "F32")


def test_the_memory_guard_counts_the_file_before_reading_it(tmp_path):
    from headcount.common.resources import memory_limit_of

    path = tmp_path / "sd.pt"
    torch.save({"w": torch.zeros(1 << 19)}, path)  # 2 MiB of float32
    with memory_limit_of(1 << 20), pytest.raises(InputError, match="needs about"):
        checkpoints.open_torch(str(path))
