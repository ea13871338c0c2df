"""Bounded reading of checkpoints other tools write, for the importers (interop.gpt2): small JSON
files (config.json, a vocabulary map), and state dicts as a listing first — name → (shape, dtype) —
with tensors loaded only once the importer has checked the listing and the memory guard.

* ``.safetensors``: the header is read and checked by common.files.read_header (never
  memory-mapped); each tensor is read from its byte span, F64 / F32 / F16 / BF16 as float64.
* ``.pt`` / ``.pth`` / ``.bin`` / ``.ckpt``: only ``torch.load(weights_only=True,
  map_location="cpu")``, PyTorch's restricted unpickler, which refuses a pickle naming any callable
  beyond tensors and plain containers before calling it (an unrestricted unpickle is never done).
  The file must be the zip archive torch.save writes (PyTorch ≥ 1.6) with stored entries, whose
  sizes bound what loading allocates; the legacy format, bare pickles and compressed archives are
  refused unread. Its pickle (data.pkl, as torch's zip reader reads it) is scanned first by
  interop.pickle_scan: string keys, no sets, bounded nesting and memo expansion, only the opcodes
  torch.save writes (a hostile key crashes or hangs torch.load's hashing).
* a folder as transformers' ``save_pretrained`` writes it: config.json beside model.safetensors
  (preferred) or pytorch_model.bin; a sharded checkpoint (an ``*.index.json``) is refused.
"""

from __future__ import annotations

import io
import math
import os
import stat
import warnings
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from headcount.common.errors import InputError
from headcount.common.files import (
    DTYPE_BYTES,
    MAX_HEADER_BYTES,
    MAX_METADATA_BYTES,
    check_model_path,
    one_line,
    parse_config,
    read_header,
    show_path,
)
from headcount.common.resources import check_memory
from headcount.interop.pickle_scan import check_state_dict_pickle

FOLDER_WEIGHTS = (
    "model.safetensors",
    "pytorch_model.bin",
)  # in the order transformers prefers them
TORCH_SUFFIXES = (".pt", ".pth", ".bin", ".ckpt")
MAX_JSON_BYTES = MAX_METADATA_BYTES  # config.json (~1 KB), a vocabulary map (50,257 ids: ~350 KB)
_NUMPY_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2"}


def read_json_file(path: str | os.PathLike, what: str, max_bytes: int = MAX_JSON_BYTES) -> Any:
    """The JSON value of a small file (`what` names it in messages: param("vocab_map"),
    "config.json"), read within `max_bytes` and common.files' JSON bounds; the path must name a
    regular file (checked on a non-blocking descriptor: a FIFO never blocks). InputError
    otherwise."""
    try:
        text = os.fsdecode(path)
    except TypeError:
        raise InputError(f"{what} must be a path, got {type(path).__name__}") from None
    name = f"{what} {show_path(text)}"
    try:
        fd = os.open(text, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise InputError(f"{name} does not exist") from None
    except (OSError, ValueError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise InputError(f"{name} cannot be opened: {reason}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = (
                "a folder"
                if stat.S_ISDIR(mode)
                else "not a regular file (a device, FIFO or socket)"
            )
            raise InputError(f"{name} is {kind}; give a JSON file")
        chunks, size = [], 0
        while size <= max_bytes and (chunk := os.read(fd, min(1 << 20, max_bytes + 1 - size))):
            chunks.append(chunk)
            size += len(chunk)
    except OSError as err:
        raise InputError(f"{name} cannot be read: {err.strerror or err}") from None
    finally:
        os.close(fd)
    if size > max_bytes:
        raise InputError(f"{name} is over {max_bytes:,} bytes; a {what} file is at most that")
    try:
        content = b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{name} is not UTF-8 text (JSON expected)") from None
    return parse_config(content, name, max_bytes, "content")


@dataclass(frozen=True)
class StateDict:
    """A checkpoint's tensors: `listed` name → (shape, safetensors dtype name) without loading
    anything; `load(names)` → those tensors as float64 arrays (after the caller's checks and memory
    guard)."""

    path: str
    kind: str  # "safetensors" | "torch"
    listed: dict[str, tuple[tuple[int, ...], str]]
    load: Callable[[list[str]], dict[str, np.ndarray]]


def locate(path: str | os.PathLike, config: str | os.PathLike | None) -> tuple[str, str | None]:
    """(weights file, config file or None) of a checkpoint folder or state-dict file; `config` (a
    config.json) takes precedence over a folder's own config.json."""
    text = os.fsdecode(path)
    if os.path.isdir(text):
        for name in FOLDER_WEIGHTS:
            if os.path.lexists(weights := os.path.join(text, name)):
                own = os.path.join(text, "config.json")
                if config is not None:
                    return weights, os.fsdecode(config)
                return weights, own if os.path.lexists(own) else None
        for name in FOLDER_WEIGHTS:
            if os.path.lexists(os.path.join(text, f"{name}.index.json")):
                raise InputError(
                    f"{show_path(text)} holds a sharded checkpoint ({name}.index.json); headcount "
                    "reads one "
                    "weights file: save with a max_shard_size the model fits in"
                )
        raise InputError(
            f"folder {show_path(text)} holds neither model.safetensors nor pytorch_model.bin"
        )
    if not text.lower().endswith((".safetensors", *TORCH_SUFFIXES)):
        raise InputError(
            f"{show_path(text)}: a checkpoint is a folder (config.json and model.safetensors or "
            "pytorch_model.bin) or a state-dict file ending in .safetensors, .pt, .pth, .bin or "
            ".ckpt"
        )
    return text, None if config is None else os.fsdecode(config)


def open_safetensors(path: str) -> StateDict:
    """A safetensors state dict: its checked header now, tensors from their byte spans on load."""
    listed = read_header(path)[1]

    def load(names: list[str]) -> dict[str, np.ndarray]:
        out = {}
        with open(path, "rb") as f:
            length = int.from_bytes(f.read(8), "little")
            header = parse_config(f.read(length).decode("utf-8", "replace"), path, MAX_HEADER_BYTES)
            for name in names:
                shape, dtype = listed[name]
                try:  # the header read_header checked, unless the file changed since
                    begin, end = header[name]["data_offsets"]
                except (KeyError, TypeError, ValueError):
                    begin, end = 0, -1
                f.seek(8 + length + begin)
                if (
                    end - begin != math.prod(shape) * DTYPE_BYTES[dtype]
                    or len(raw := f.read(end - begin)) != end - begin
                ):
                    raise InputError(
                        f"{show_path(path)}: tensor {name!r} cannot be read (the file changed "
                        "while read)"
                    )
                if dtype == "BF16":  # the top half of a float32
                    values = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
                else:
                    values = np.frombuffer(raw, _NUMPY_DTYPES[dtype])
                out[name] = values.astype(np.float64).reshape(shape)
        return out

    return StateDict(path, "safetensors", listed, load)


def _torch_dtype(dtype: Any) -> str:
    """A torch dtype by safetensors' name (F32, BF16, …) where it has one."""
    text = str(dtype).removeprefix("torch.")
    names = {
        "float64": "F64",
        "float32": "F32",
        "float16": "F16",
        "bfloat16": "BF16",
        "bool": "BOOL",
    }
    return names.get(text, text.replace("uint", "U").replace("int", "I"))


def open_torch(path: str) -> StateDict:
    """A torch.save state dict, read with torch.load(weights_only=True) only (module docstring). The
    file is read once into memory: the pickle scanned and the archive torch.load reads are the same
    bytes (a file replaced in between cannot slip past the scan)."""
    name = show_path(path)
    data = _read_bounded(
        check_model_path(path), name
    )  # a regular file: reading never blocks on a FIFO
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            entries = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError):
        raise InputError(
            f"{name} is not the zip archive torch.save writes (PyTorch ≥ 1.6); other pickles and "
            "the "
            "legacy format are not read"
        ) from None
    if packed := [e.filename for e in entries if e.compress_type != zipfile.ZIP_STORED]:
        raise InputError(
            f"{name}: entry {packed[0][:80]!r} is compressed; torch.save stores entries as they are"
        )
    check_memory(len(data) + 2 * sum(e.file_size for e in entries), f"reading {name}")
    import torch  # a core dependency; used here only to read a state dict

    check_state_dict_pickle(
        _torch_pickle(data, name, entries, torch), name
    )  # before torch.load sees it
    try:
        with warnings.catch_warnings():  # its deprecation notes would be lines on stderr
            warnings.simplefilter("ignore")
            state = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except MemoryError:
        raise
    except Exception as err:  # noqa: BLE001 — whatever the restricted unpickler refuses, a file error
        text = str(err)
        reason = text.split("WeightsUnpickler error:", 1)[-1].split(" Please ", 1)[
            0
        ]  # not its advice
        raise InputError(
            f"{name}: torch.load(weights_only=True) cannot read it; it reads tensors and plain "
            "containers, "
            f"never code ({one_line(reason, 160)})"
        ) from None
    return state_dict_of(state, name, path)


def state_dict_of(state: Any, name: str, path: str) -> StateDict:
    """The StateDict of a mapping of names to dense CPU tensors (what torch.load returned, or a live
    module's state_dict()), `name` in messages; InputError for anything else."""
    import torch

    if not isinstance(state, Mapping):
        raise InputError(
            f"{name} holds a {type(state).__name__}, not a state dict (a dict of tensors)"
        )
    listed = {}
    for key, value in state.items():
        if not isinstance(
            key, str
        ):  # the pickle scan refuses such keys: this guards a changed torch.load
            raise InputError(
                f"{name}: key {one_line(repr(key), 80)} is a {type(key).__name__}, not a name: a "
                "state dict "
                "maps names to tensors (torch.save(model.state_dict(), path))"
            )
        if not _dense_cpu_tensor(value, torch):
            raise InputError(
                f"{name}: entry {one_line(repr(key), 80)} is a {type(value).__name__}, not a "
                "dense tensor; "
                "a state dict maps names to tensors (torch.save(model.state_dict(), path))"
            )
        listed[key] = (tuple(value.shape), _torch_dtype(value.dtype))

    def load(names: list[str]) -> dict[str, np.ndarray]:
        return {
            n: np.array(state[n].detach().to(torch.float64).numpy(), dtype=np.float64)
            for n in names
        }

    return StateDict(path, "torch", listed, load)


def _read_bounded(path: str, name: str) -> bytes:
    """The file's bytes, within the memory guard (checked against its size before reading)."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            check_memory(size, f"reading {name}")
            data = f.read(size + 1)
    except OSError as err:
        raise InputError(f"{name} cannot be read: {err.strerror or err}") from None
    if len(data) != size:
        raise InputError(f"{name} changed while it was read")
    return data


def _torch_pickle(data: bytes, name: str, entries: list[zipfile.ZipInfo], torch: Any) -> bytes:
    """The pickle torch.load will unpickle: the archive's one `<folder>/data.pkl`, read by torch's
    own zip reader (zipfile and torch's reader can see different entries in a crafted archive: what
    torch reads is what must be scanned), of the size zipfile listed; and every record torch would
    load must fit the memory guard as torch's reader sizes it (entries may overlap in a crafted
    archive)."""
    pickles = [e for e in entries if _is_data_pkl(e.filename)]
    if not hasattr(
        torch._C, "PyTorchFileReader"
    ):  # a torch without it (private API): zipfile's view
        if len(pickles) != 1:
            raise InputError(
                f"{name} holds {len(pickles)} pickles (…/data.pkl); torch.save writes one"
            )
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return archive.read(pickles[0])
    try:
        reader = torch._C.PyTorchFileReader(io.BytesIO(data))  # what torch.load opens
        records = reader.get_all_records()
        seen = [r for r in records if r.lower() == "data.pkl"]  # miniz matches any case
        if len(pickles) != 1 or len(seen) != 1:
            raise InputError(
                f"{name} holds {max(len(pickles), len(seen))} pickles (…/data.pkl); torch.save "
                "writes one"
            )
        if reader.get_record_size(seen[0]) != pickles[0].file_size:
            raise InputError(f"{name}: zip readers disagree on data.pkl's size (a crafted archive)")
        check_memory(
            len(data) + 2 * sum(reader.get_record_size(r) for r in records), f"reading {name}"
        )
        return bytes(reader.get_record(seen[0]))
    except RuntimeError as err:  # torch's reader refuses the archive
        raise InputError(
            f"{name} is not the zip archive torch.save writes ({one_line(err, 160)})"
        ) from None


def _is_data_pkl(filename: str) -> bool:
    """`<folder>/data.pkl` in any case: the entry torch's reader finds for "data.pkl"."""
    folder, _, rest = filename.lower().partition("/")
    return rest == "data.pkl" and bool(folder)


def _dense_cpu_tensor(value: Any, torch: Any) -> bool:
    """A plain tensor in CPU memory (not a meta, nested, sparse or quantized one, which weights_only
    also rebuilds)."""
    try:
        return (
            isinstance(value, torch.Tensor)
            and value.layout == torch.strided
            and value.device.type == "cpu"
            and not value.is_nested
            and not value.is_quantized
        )
    except (RuntimeError, TypeError, AttributeError, NotImplementedError):
        return False


def open_state_dict(path: str) -> StateDict:
    """The state dict in `path`, by its suffix: torch's (TORCH_SUFFIXES) or safetensors."""
    return (open_torch if path.lower().endswith(TORCH_SUFFIXES) else open_safetensors)(path)
