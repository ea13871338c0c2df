"""Byte-level safetensors for the file fuzzer: parse a file into (header, data), and build files
whose header says anything at all (lies about lengths, offsets, dtypes, shapes; numbers or nesting
no JSON library would write). Also the exploit payloads that must never run: pickles that touch a
marker file."""

from __future__ import annotations

import json
import os
import pickle
import struct
from pathlib import Path
from typing import Any

BIG = "1" + "0" * 5000  # a 5001-digit integer: beyond Python's 4300-digit int/str limit
DEEP = 100_000  # nesting depth of the deep values


def parse(blob: bytes) -> tuple[dict[str, Any], bytes]:
    n = struct.unpack("<Q", blob[:8])[0]
    return json.loads(blob[8 : 8 + n]), blob[8 + n :]


def build(
    header: dict[str, Any] | bytes | str, data: bytes = b"", length: int | None = None
) -> bytes:
    """A file: 8-byte little-endian header length (or `length`, a lie), the header, the data."""
    text = (
        header
        if isinstance(header, bytes)
        else (header if isinstance(header, str) else dumps(header))
    )
    raw = text.encode("utf-8") if isinstance(text, str) else text
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw) if length is None else length % 2**64) + raw + data


def dumps(value: Any, raw: dict[str, str] | None = None) -> str:
    """JSON text in which each string placeholder key of `raw` is replaced by its raw JSON text
    (numbers beyond any limit, NaN, Infinity, deep nesting)."""
    text = json.dumps(value)
    for placeholder, replacement in (raw or {}).items():
        text = text.replace(json.dumps(placeholder), replacement)
    return text


def deep_list(depth: int = DEEP) -> str:
    return "[" * depth + "]" * depth


def deep_dict(depth: int = DEEP) -> str:
    return '{"a":' * depth + "1" + "}" * depth


def config_of(blob: bytes) -> dict[str, Any]:
    header, _ = parse(blob)
    return json.loads(header["__metadata__"]["headcount"])


def with_config_text(blob: bytes, text: str) -> bytes:
    header, data = parse(blob)
    header["__metadata__"]["headcount"] = text
    return build(header, data)


def with_config(blob: bytes, change, raw: dict[str, str] | None = None) -> bytes:
    """The file with its headcount config changed by `change(config)` (in place), placeholders →
    raw."""
    config = config_of(blob)
    change(config)
    return with_config_text(blob, dumps(config, raw))


def with_header(
    blob: bytes, change, raw: dict[str, str] | None = None, length: int | None = None
) -> bytes:
    """The file with its safetensors header changed by `change(header)` (in place), data
    unchanged."""
    header, data = parse(blob)
    change(header)
    return build(dumps(header, raw), data, length)


def tensor_names(blob: bytes) -> list[str]:
    header, _ = parse(blob)
    return [k for k in header if k != "__metadata__"]


def with_tensors(blob: bytes, change) -> bytes:
    """The file rewritten with tensors changed by `change(dict name → array)` (a consistent file:
    the header tells the truth about the new arrays)."""
    import numpy as np
    from safetensors.numpy import load, save

    header, _ = parse(blob)
    tensors = {k: np.array(v) for k, v in load(blob).items()}
    change(tensors)
    return save(tensors, metadata=header.get("__metadata__"))


class Payload:
    """Pickled to a call of os.system touching `marker`: whatever unpickles it runs the command."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def pickle_payload(marker: str) -> bytes:
    return pickle.dumps({"W_E": Payload(marker)})


def torch_payload(path: Path, marker: str) -> None:
    import torch

    torch.save({"W_E": Payload(marker)}, path)


def numpy_payload(path: Path, marker: str) -> None:
    import numpy as np

    np.save(path, np.array([Payload(marker)], dtype=object), allow_pickle=True)


def zip_bomb_lite(path: Path, size: int = 200 * 2**20) -> None:
    """A small zip (≈ 200 KB) that inflates to `size` bytes of zeros."""
    import zipfile

    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        with z.open("data.pkl", "w", force_zip64=True) as f:
            chunk = b"\0" * 2**20
            for _ in range(size // len(chunk)):
                f.write(chunk)


def sparse_tensor_file(path: Path, blob: bytes, name: str, shape: list[int]) -> None:
    """The file with tensor `name` (a new one if absent) declared float64 of `shape`, honestly
    (offsets and file size agree), its data a hole: gigabytes on paper, nothing on disk."""
    header, data = parse(blob)
    meta = header.pop("__metadata__", None)
    order = sorted(header, key=lambda k: header[k]["data_offsets"][0])
    if name not in header:
        order.append(name)
    pieces, offset, new = [], 0, {}
    for key in order:
        if key == name:
            size = 8
            for dim in shape:
                size *= dim
            new[key] = {"dtype": "F64", "shape": shape, "data_offsets": [offset, offset + size]}
            pieces.append((None, size))
        else:
            start, end = header[key]["data_offsets"]
            new[key] = {**header[key], "data_offsets": [offset, offset + end - start]}
            pieces.append((data[start:end], end - start))
        offset += pieces[-1][1]
    if meta is not None:
        new["__metadata__"] = meta
    with open(path, "wb") as f:
        f.write(build(new))
        for chunk, size in pieces:
            if chunk is None:
                f.seek(size, os.SEEK_CUR)
            else:
                f.write(chunk)
        f.truncate(f.tell())
