"""GPT-2 checkpoints for the importer's tests, without transformers: random state dicts in
transformers' GPT-2 layout (Conv1D weights [in out]), config.json files, and pickles that must never
be run."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file


def state_dict(
    seed: int = 0,
    layers: int = 2,
    d: int = 8,
    vocab: int = 11,
    n_ctx: int = 6,
    d_mlp: int | None = None,
    prefix: str = "",
    lm_head: bool = False,
) -> dict[str, np.ndarray]:
    """A random float32 GPT-2 state dict (every weight, bias and LayerNorm parameter
    non-trivial)."""
    rng = np.random.default_rng(seed)
    d_mlp = 4 * d if d_mlp is None else d_mlp
    normal = lambda *shape: (0.5 * rng.standard_normal(shape)).astype(np.float32)  # noqa: E731
    scale = lambda *shape: (1 + 0.3 * rng.standard_normal(shape)).astype(np.float32)  # noqa: E731
    out = {"wte.weight": normal(vocab, d), "wpe.weight": normal(n_ctx, d)}
    for l in range(layers):
        h = f"h.{l}."
        out |= {h + "ln_1.weight": scale(d), h + "ln_1.bias": normal(d)}
        out |= {h + "attn.c_attn.weight": normal(d, 3 * d), h + "attn.c_attn.bias": normal(3 * d)}
        out |= {h + "attn.c_proj.weight": normal(d, d), h + "attn.c_proj.bias": normal(d)}
        out |= {h + "ln_2.weight": scale(d), h + "ln_2.bias": normal(d)}
        out |= {h + "mlp.c_fc.weight": normal(d, d_mlp), h + "mlp.c_fc.bias": normal(d_mlp)}
        out |= {h + "mlp.c_proj.weight": normal(d_mlp, d), h + "mlp.c_proj.bias": normal(d)}
    out |= {"ln_f.weight": scale(d), "ln_f.bias": normal(d)}
    out = {prefix + k: v for k, v in out.items()}
    if lm_head:
        outer = prefix.removesuffix("transformer.")
        out[outer + "lm_head.weight"] = normal(vocab, d)
    return out


def config(n_head: int = 2, **fields) -> dict:
    """A config.json as transformers writes it for GPT-2 (only the fields the importer reads, and a
    few)."""
    return {"model_type": "gpt2", "n_head": n_head, "activation_function": "gelu_new"} | fields


def write_folder(folder: Path, state: dict[str, np.ndarray], cfg: dict | None) -> Path:
    """A save_pretrained-style folder: model.safetensors (and config.json unless cfg is None)."""
    folder.mkdir(parents=True, exist_ok=True)
    save_file(state, str(folder / "model.safetensors"), metadata={"format": "pt"})
    if cfg is not None:
        (folder / "config.json").write_text(json.dumps(cfg), encoding="utf-8")
    return folder


def write_json(path: Path, value) -> Path:
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


class Payload:
    """Unpickling this object creates `marker` (an unrestricted unpickle would run it)."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


# --- pickles whose dict key torch.load would hash to death (the scan in interop.pickle_scan refuses
# them) ----


def torch_zip(path: Path, pickle_bytes: bytes) -> Path:
    """`pickle_bytes` as torch.save's zip archive holds its pickle: stored entries under archive/,
    beside the small records torch.save writes (format version, alignment, byte order, version), and
    no tensor data."""
    import zipfile

    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("archive/data.pkl", pickle_bytes)
        archive.writestr("archive/.format_version", b"1")
        archive.writestr("archive/.storage_alignment", b"64")
        archive.writestr("archive/byteorder", b"little")
        archive.writestr("archive/version", b"3\n")
        archive.writestr("archive/.data/serialization_id", b"0" * 40)
    return path


def deep_key_pickle(depth: int = 150_000) -> bytes:
    """{((…(None,)…),): None} with the key `depth` tuples deep (TUPLE1 repeated): hashing it
    recurses in C once per level, past the C stack (a segfault in torch.load before the scan)."""
    return b"\x80\x02}N" + b"\x85" * depth + b"Ns."


def shared_key_pickle(doublings: int = 40) -> bytes:
    """{t: None} with t = (x, x) built `doublings` times over the memo (x on the stack, BINGET 0 for
    its second copy, TUPLE2, BINPUT 0): 2**doublings leaves in a few hundred bytes; hashing it
    visits every one (a hang in torch.load before the scan)."""
    return b"\x80\x02}Nq\x00" + b"h\x00\x86q\x00" * doublings + b"Ns."


def write_key_bombs(folder: Path) -> dict[str, Path]:
    """The two recipes as torch.save-style .bin files in `folder`: {"deep-key": …, "shared-key":
    …}."""
    folder.mkdir(parents=True, exist_ok=True)
    return {
        "deep-key": torch_zip(folder / "deep-key.bin", deep_key_pickle()),
        "shared-key": torch_zip(folder / "shared-key.bin", shared_key_pickle()),
    }
