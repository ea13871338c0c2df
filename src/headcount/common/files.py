"""Safe file primitives shared by every model format: atomic writes, and bounded reading of
safetensors headers, JSON configs and tensors.

Reading is bounded, because model files are shared and may be hostile: the path must name a regular
file (checked on a non-blocking descriptor: a FIFO never blocks); the header is parsed here, never
memory-mapped, and checked as safetensors checks it; the JSON is read within a size, a nesting depth
(counted without recursion) and an integer length; counts are integers within bounds; every tensor's
shape and dtype is checked against the config before any tensor is loaded, within the memory guard;
weights must be finite. Every refusal is a ModelFileError (an InputError: exit 2, one line) saying
what is wrong.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from safetensors import SafetensorError
from safetensors.numpy import load_file
from safetensors.numpy import save as safetensors_bytes

from headcount.common.errors import InputError
from headcount.common.resources import check_memory

FORMAT = "headcount-transformer"  # the weight form (headcount.core.model.files)
TABLE_FORMAT = "headcount-one-layer-table"  # the one-layer table form

# Bounds on what a file may ask of the reader (issue 13). No option raises them: a file beyond them
# is not one headcount writes, and the message says which bound it broke.
MAX_METADATA_BYTES = 1 << 20
# A transformer, table or minmax config is a few KB (the layer list at ~30 bytes a layer, the
# decoder, the `info` labels): 1 MiB is over 100× the largest headcount writes. Boolean files keep
# exact rationals in the metadata and pass their own, larger bound (boolean/model.py).
MAX_METADATA_DEPTH = (
    32  # configs nest ≤ 5 deep; a JSON parser recurses per level (100,000 deep: refused)
)
MAX_METADATA_INT_DIGITS = (
    100  # counts, sizes, seeds: ≤ 20 digits; int() refuses > 4300, quadratic below
)
MAX_HEADER_BYTES = 100_000_000  # a safetensors header: the safetensors library's own bound
MAX_AXES = 8  # axes of one tensor: headcount's have at most 4
MAX_HEADS_PER_LAYER = (
    1024  # heads of one layer (or of a table): constructions have ≤ 2, trained ≤ 16
)
WEIGHT_DTYPES = (
    "F64",
    "F32",
    "F16",
)  # save_model writes F64; F32/F16 read as float64 (at most 4× larger)
DTYPE_BYTES = {
    "F64": 8,
    "F32": 4,
    "F16": 2,
    "BF16": 2,
    "I64": 8,
    "I32": 4,
    "I16": 2,
    "I8": 1,
    "U8": 1,
}
DTYPE_BYTES |= {
    "U64": 8,
    "U32": 4,
    "U16": 2,
    "BOOL": 1,
}  # the dtypes a header may name (others: refused)
_LAST_HEADER: list = [
    None,
    None,
]  # ((file size, header bytes), parsed header) of the last header read
_PATH_SHOWN = 160  # characters of a path a message shows (a 5000-character path stays readable)


class ModelFileError(InputError):
    """A model file that cannot be read as a headcount model (the message says why; the user can fix
    it)."""


def atomic_write_bytes(path: str | os.PathLike, write) -> None:
    """Call write(tmp_path) on a temporary file beside `path`, then rename it into place, so a
    reader never sees half a file. The file gets the permissions any new file gets (0666 less the
    umask), not mkstemp's 0600: a model or report is as readable as the user's other files. An
    existing target that is not a regular file (a device such as /dev/null, a FIFO, a folder) is
    refused: the rename would replace it."""
    path = Path(path)
    if path.exists() and not path.is_file():
        raise InputError(
            f"{show_path(path)} exists and is not a regular file: write to a file path"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except (
        OSError
    ) as err:  # a full disk or a file-size limit: named by the file asked for, not the temporary
        Path(tmp).unlink(missing_ok=True)
        raise OSError(err.errno, err.strerror or str(err), str(path)) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_safetensors(
    path: str | os.PathLike, tensors: dict, metadata: dict[str, str]
) -> None:
    """A safetensors file written atomically: safetensors serialises to bytes and Python writes
    them, so a write error (a full disk) is an OSError naming `path` (exit 2), never the library's
    own error type."""
    payload = safetensors_bytes(tensors, metadata=metadata)
    atomic_write_bytes(path, lambda tmp: Path(tmp).write_bytes(payload))


def _umask() -> int:
    mask = os.umask(0)  # the only portable way to read it is to set it
    os.umask(mask)
    return mask


# --- bounded reading
# -----------------------------------------------------------------------------------


def show_path(path: str | os.PathLike) -> str:
    """A path as messages print it: quoted, and shortened in the middle beyond _PATH_SHOWN
    characters."""
    text, half = (
        repr(os.fsdecode(path) if isinstance(path, str | bytes | os.PathLike) else path),
        _PATH_SHOWN // 2,
    )
    return (
        text
        if len(text) <= _PATH_SHOWN
        else f"{text[:half]}…{text[-half:]} ({len(text) - 2} characters)"
    )


def check_model_path(path: str | os.PathLike) -> str:
    """`path` as a str once it names a regular file this process can read; ModelFileError otherwise
    (a missing file or dangling link, a folder, a FIFO, a device such as /dev/null, no permission, a
    name too long). The file is opened non-blocking and checked on its descriptor, so a FIFO never
    blocks."""
    try:
        text = os.fsdecode(path)
    except TypeError:
        raise ModelFileError(f"a model file must be a path, got {type(path).__name__}") from None
    name = show_path(text)
    try:
        fd = os.open(text, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        link = " (a symbolic link to a missing file)" if os.path.islink(text) else ""
        raise ModelFileError(f"model file {name} does not exist{link}") from None
    except (OSError, ValueError) as err:  # permission, name too long, a NUL byte, a link loop
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise ModelFileError(f"model file {name} cannot be opened: {reason}") from None
    try:
        mode = os.fstat(fd).st_mode
    finally:
        os.close(fd)
    if stat.S_ISDIR(mode):
        raise ModelFileError(f"model file {name} is a folder, not a model file")
    if not stat.S_ISREG(mode):
        raise ModelFileError(f"model file {name} is not a regular file (a device, FIFO or socket)")
    return text


_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_LONG_NUMBER = re.compile(rf"\d{{{MAX_METADATA_INT_DIGITS + 1},}}")


def json_depth(text: str, bare: bool = False) -> int:
    """The deepest nesting of [ and { in a JSON text (strings skipped, unless `bare`), without
    recursion."""
    brackets = _NOT_BRACKET.sub("", text if bare else _JSON_STRING.sub("", text)).encode("ascii")
    steps, depth, deepest = np.frombuffer(brackets, dtype=np.uint8), 0, 0
    for start in range(0, len(steps), 1 << 20):
        chunk = steps[start : start + (1 << 20)]
        levels = depth + np.cumsum(np.where((chunk == ord("[")) | (chunk == ord("{")), 1, -1))
        deepest, depth = max(deepest, int(levels.max())), int(levels[-1])
    return deepest


def parse_config(
    text: str, name: str, max_bytes: int = MAX_METADATA_BYTES, what="headcount config"
) -> Any:
    """The JSON value of a config (or header) text within the bounds above, each checked on the text
    outside its strings before parsing (regular expressions and numpy, no recursion); ModelFileError
    otherwise."""
    if (size := len(text.encode("utf-8", "surrogatepass"))) > max_bytes:
        raise ModelFileError(
            f"{name}: its {what} is {size:,} bytes; model files hold at most {max_bytes:,}"
        )
    bare = _JSON_STRING.sub("", text)
    if (depth := json_depth(bare, bare=True)) > MAX_METADATA_DEPTH:
        raise ModelFileError(
            f"{name}: its {what} nests {depth} levels deep; allowed at most {MAX_METADATA_DEPTH}"
        )
    if long := _LONG_NUMBER.search(
        bare
    ):  # int() refuses > 4300 digits deep inside json.loads, or is slow
        count, limit = len(long.group()), MAX_METADATA_INT_DIGITS
        raise ModelFileError(
            f"{name}: its {what} holds a number of {count:,} digits; allowed at most {limit}"
        )
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError, ValueError) as err:
        raise ModelFileError(f"{name}: its {what} is not JSON ({err})") from None


# A JSON type schema, checked once where a config is read, before any field is used: a field that
# must be a string and holds a list would otherwise reach `in {…}` or set() (unhashable: an internal
# error, exit 1). A schema is a type name ("string", "boolean", "integer", "number", "array",
# "object", "any"; a trailing "?" also allows null), [item schema] for an array, or {key: schema}
# for an object whose listed keys, where present, are checked (other keys: any JSON). Integers and
# numbers are never booleans.
_JSON_TYPES: dict[str, Any] = {
    "string": str,
    "boolean": bool,
    "integer": int,
    "number": (int, float),
    "array": list,
    "object": dict,
}
_TYPE_WORDS = {
    "string": "a string",
    "boolean": "true or false",
    "integer": "an integer",
    "number": "a number",
}
_TYPE_WORDS |= {"array": "a list", "object": "a JSON object"}


def check_json_types(value: Any, schema: Any, name: str, where: str = "", error=InputError) -> None:
    """error(one line: `name`, the field's path, what it must be, what it holds) unless `value` fits
    `schema` (above). Recursion follows the schema, never the data: a schema is a few levels
    deep."""
    field = repr(where) if where else "the value"
    if isinstance(schema, list):
        if not isinstance(value, list):
            raise error(f"{name}: {field} must be a list, got {short_repr(value)}")
        for i, item in enumerate(value):
            check_json_types(item, schema[0], name, f"{where}[{i}]", error)
        return
    if isinstance(schema, dict):
        if not isinstance(value, dict):
            raise error(f"{name}: {field} must be a JSON object, got {short_repr(value)}")
        for key, inner in schema.items():
            if key in value:
                check_json_types(value[key], inner, name, f"{where}.{key}" if where else key, error)
        return
    kind, nullable = schema.rstrip("?"), schema.endswith("?")
    if kind == "any" or (value is None and nullable):
        return
    fits = isinstance(value, _JSON_TYPES[kind]) and not (
        isinstance(value, bool) and kind in ("integer", "number")
    )
    if not fits:
        allowed = _TYPE_WORDS[kind] + (" or null" if nullable else "")
        raise error(f"{name}: {field} must be {allowed}, got {short_repr(value)}")


def read_header(path: str) -> tuple[dict[str, str], dict[str, tuple[tuple[int, ...], str]]]:
    """(metadata, name → (shape, dtype)) of a safetensors file, from its header alone — the file is
    never memory-mapped — checked as safetensors checks it: known dtypes, sizes that match the
    shapes, and data spans that tile the rest of the file exactly."""
    name = show_path(path)
    with open(check_model_path(path), "rb") as f:
        size, head = os.fstat(f.fileno()).st_size, f.read(8)
        length = int.from_bytes(head, "little") if len(head) == 8 else -1
        if not 2 <= length <= min(MAX_HEADER_BYTES, size - 8):
            raise ModelFileError(
                f"{name} is not a safetensors file (header length {length} in {size} bytes)"
            )
        raw = f.read(length)
    if _LAST_HEADER[0] == (
        key := (size, raw)
    ):  # read_config and TensorShapes read one header: parse it once
        return _LAST_HEADER[1]
    header = parse_config(
        raw.decode("utf-8", "replace"), name, MAX_HEADER_BYTES, "safetensors header"
    )
    meta = header.pop("__metadata__", None) or {} if isinstance(header, dict) else None
    if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
        raise ModelFileError(
            f"{name} is not a safetensors file (its header is not an object of tensors)"
        )
    tensors, spans, position = {}, [], 0
    for tensor, entry in header.items():
        if (parts := _tensor_entry(entry)) is None:
            raise ModelFileError(
                f"{name} is not a safetensors file (tensor {tensor[:80]!r}: {short_repr(entry)})"
            )
        tensors[tensor] = parts[:2]
        spans.append(parts[2])
    for begin, end in sorted(spans):
        position = end if begin == position else -1
    if position != size - 8 - length:
        raise ModelFileError(
            f"{name} is not a safetensors file (its tensors do not tile its {size} bytes)"
        )
    _LAST_HEADER[:] = [key, (meta, tensors)]
    return meta, tensors


def _tensor_entry(entry: Any) -> tuple[tuple[int, ...], str, list[int]] | None:
    """(shape, dtype, data span) of a header entry, when well-formed: its span as long as its shape
    says."""
    t = entry if isinstance(entry, dict) else {}
    shape, dtype, span = t.get("shape"), t.get("dtype"), t.get("data_offsets")
    lists = [
        isinstance(v, list) and all(type(k) is int and k >= 0 for k in v) for v in (shape, span)
    ]
    if not (all(lists) and len(shape) <= MAX_AXES and len(span) == 2):
        return None  # a shape of at most MAX_AXES sizes ≥ 0, a span of two offsets ≥ 0
    size = DTYPE_BYTES.get(dtype, 0) * math.prod(shape) if isinstance(dtype, str) else -1
    return (
        (tuple(shape), dtype, span)
        if size >= 0 and dtype in DTYPE_BYTES and span[1] - span[0] == size
        else None
    )


def read_config(
    path: str | os.PathLike, formats=(FORMAT, TABLE_FORMAT), max_bytes=MAX_METADATA_BYTES
) -> dict:
    """The JSON config of a model file, checked to be a headcount model of one of `formats` (within
    the bounds above: at most `max_bytes` of JSON)."""
    name = show_path(path)
    meta = read_header(path)[0]
    if "headcount" not in meta:
        raise ModelFileError(f"{name} has no headcount config in its safetensors metadata")
    config = parse_config(meta["headcount"], name, max_bytes)
    if not isinstance(config, dict):
        raise ModelFileError(f"{name}: headcount config must be a JSON object")
    if config.get("format") not in formats:
        expected = " or ".join(repr(f) for f in formats)
        raise ModelFileError(
            f"{name} holds {short_repr(config.get('format'))}, expected {expected}"
        )
    return config


def one_line(text: object, limit: int = 300) -> str:
    """`text` (a message or an exception) on one line, whitespace collapsed, cut at `limit`
    characters."""
    return line if len(line := " ".join(str(text).split())) <= limit else f"{line[:limit]}…"


def invalid(path: str | os.PathLike, fmt: str, why: str) -> ModelFileError:
    """The error for a file whose config or tensors are not a valid model of format `fmt`."""
    return ModelFileError(f"{show_path(path)} is not a valid {fmt} model: {why}")


def check_version(
    config: dict[str, Any], path: str | os.PathLike, fmt: str, supported: tuple[int, ...]
):
    """ModelFileError unless the config's `version` is one this headcount reads (named in the
    message)."""
    if type(version := config.get("version")) is not int or version not in supported:
        listed = ", ".join(str(v) for v in supported)
        raise invalid(
            path, fmt, f"version {short_repr(version)} is not supported; it reads version {listed}"
        )


def config_int(
    config: dict[str, Any], key: str, path, fmt: str, low: int, high: int, name=None
) -> int:
    """config[key] (called `name` in messages) as an int in [low, high], not a bool, float, NaN or
    string; ModelFileError otherwise."""
    value, name = config.get(key), name or repr(key)
    if type(value) is not int:
        raise invalid(path, fmt, f"{name} must be an integer, got {short_repr(value)}")
    if not low <= value <= high:
        raise invalid(path, fmt, f"{name} = {value} is out of range: allowed {low}..{high}")
    return value


def config_info(config: dict[str, Any], path, fmt: str) -> dict[str, Any]:
    """The file's own `info` labels (an object; {} when absent). Labels, never facts: a file can say
    anything about itself, so reports show them as `file_label`."""
    info = config.get("info", {})
    if not isinstance(info, dict):
        raise invalid(path, fmt, f"'info' must be a JSON object, got {short_repr(info)}")
    return info


def short_repr(value: Any) -> str:
    return one_line(repr(value), 60)  # type: ignore[arg-type]


class TensorShapes:
    """The tensors a file lists — name → (shape, dtype) — read from its header; nothing is
    loaded."""

    def __init__(self, path: str, fmt: str):
        self.path, self.fmt = path, fmt
        self.listed = read_header(path)[1]

    def error(self, why: str) -> ModelFileError:
        return invalid(self.path, self.fmt, why)

    def expect(
        self, name: str, want: tuple, meaning: str, dtypes=WEIGHT_DTYPES, empty: bool = False
    ):
        """The shape of tensor `name`, checked: it exists, has shape `want` (None: any size;
        `meaning` names the axes), every size ≥ 1 (unless `empty`), and one of `dtypes`."""
        if name not in self.listed:
            raise self.error(f"tensor {name!r} is missing")
        shape, dtype = self.listed[name]
        if len(shape) != len(want) or any(w is not None and w != g for w, g in zip(want, shape)):
            shown = [("*" if w is None else w) for w in want]
            raise self.error(
                f"tensor {name!r} has shape {list(shape)}, expected {shown} = {meaning}"
            )
        if not empty and min(shape, default=1) < 1:
            raise self.error(f"tensor {name!r} has shape {list(shape)}: every size must be ≥ 1")
        if dtype not in dtypes:
            raise self.error(f"tensor {name!r} has dtype {dtype}, expected {' or '.join(dtypes)}")
        return shape

    def only(self, names) -> None:
        """No tensors beyond `names` (a file that lists more than its config says is not one we
        wrote)."""
        extra = sorted(set(self.listed) - set(names))
        if extra:
            listed = ", ".join(repr(e) for e in extra[:3]) + (" …" if len(extra) > 3 else "")
            raise self.error(f"it holds tensors its config does not describe ({listed})")

    def check_memory(self) -> None:
        """The resource guard on loading: every listed tensor as float64, twice (read, then
        converted)."""
        elements = sum(float(np.prod(shape, dtype=np.float64)) for shape, _ in self.listed.values())
        check_memory(16 * elements, f"loading {show_path(self.path)}")


def load_tensors(shapes: TensorShapes, finite: bool = True) -> dict[str, np.ndarray]:
    """Every tensor of a checked file as float64; ModelFileError if one is unreadable or (with
    `finite`) holds NaN or ±inf."""
    shapes.check_memory()
    try:
        tensors = load_file(shapes.path)
    except (SafetensorError, OSError, ValueError) as err:
        raise ModelFileError(
            f"{show_path(shapes.path)}: cannot read its tensors ({one_line(err)})"
        ) from None
    out = {}
    for name, value in tensors.items():
        value = np.ascontiguousarray(value, dtype=np.float64)
        if finite and not np.all(np.isfinite(value)):
            raise shapes.error(
                f"tensor {name!r} holds NaN or infinite values; model weights must be finite"
            )
        out[name] = value
    return out
