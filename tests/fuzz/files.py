"""Corrupt and malicious model files for every `--model` command (induction predict / certify /
protocol / refute, minmax verify, boolean check), built from valid files the CLI writes
(`Fixtures`).

    fixtures = Fixtures.make(root) model_file_cases(fixtures)      # [Case]: every variant × every
    command that reads that kind of file

Variants: header lies (lengths, offsets, dtypes, shapes), truncation, garbage, pickles / torch /
numpy files whose unpickling touches a marker file, zip bombs-lite, sparse multi-GiB tensors, FIFOs
and symlinks, huge numbers and 100,000-deep nesting in the metadata, wrong formats and versions,
unknown decoder kinds (including modules that run code on import), wrong shapes, NaN/inf weights,
5,000 and 80,000 heads, and for Boolean files the exact rationals ("1e10000000", "1/0", a million
digits, …)."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.fuzz import safetensors_raw as st
from tests.fuzz.harness import MAX_MEMORY, REPO, Case
from tests.fuzz.model_variants import VALID_RATIONALS, short, variants

ZEN = "Beautiful is better than ugly"  # printed by `import this`: a module run from a file's text
NAN_LABEL = '"construction": "two_layer_induction"'  # a label the NaN file gives itself


@dataclass(frozen=True)
class Target:
    """A command that reads one kind of model file: its argv around `--model PATH`."""

    kind: str  # transformer | table | minmax | boolean
    command: str
    args: tuple[str, ...]

    def argv(self, path: str, max_memory: bool = True) -> tuple[str, ...]:
        memory = ("--max-memory", MAX_MEMORY) if max_memory else ()
        return (*self.command.split(), "--model", path, *self.args, "--json", *memory)


TARGETS = (
    Target("transformer", "induction predict", ("--input", "0 1 0 1")),
    Target("transformer", "induction certify", ("--n", "4", "--alphabet", "2")),
    Target(
        "transformer",
        "evaluate",
        ("--task", "induction", "--n", "4", "--alphabet", "2", "--samples", "8"),
    ),
    Target("transformer", "analyze heads", ("--n", "4", "--alphabet", "2", "--samples", "8")),
    Target(
        "transformer",
        "analyze patterns",
        ("--out", "patterns", "--n", "4", "--alphabet", "2", "--samples", "8"),
    ),
    Target("transformer", "export transformer-lens", ("--out", "tl")),
    Target("table", "induction protocol", ("--k", "2", "--precision-bits", "8")),
    Target("table", "induction refute", ("--k", "2", "--precision-bits", "4")),
    Target("minmax", "minmax verify", ("--M", "4", "--n", "3")),
    Target("minmax", "minmax lower-bound", ("--n", "9")),
    Target("boolean", "boolean check", ("--function", "xor")),
)
BASE_ARGV = {
    "transformer": [
        "induction",
        "construct",
        "--layers",
        "2",
        "--n",
        "4",
        "--alphabet",
        "2",
        "--out",
    ],
    "table": ["induction", "construct", "--layers", "1", "--n", "5", "--alphabet", "3", "--out"],
    "minmax": ["minmax", "construct", "--M", "4", "--n", "3", "--heads", "1", "--out"],
    "boolean": [
        "boolean",
        "construct",
        "--function",
        "xor",
        "--n",
        "4",
        "--degree",
        "2",
        "--heads",
        "2",
        "--out",
    ],
}


def _cli(argv: list[str]) -> None:
    """Run the CLI in this process, its output discarded; RuntimeError unless it exits 0."""
    from headcount.cli import main

    sink = io.StringIO()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        try:
            main(argv)
        except SystemExit as err:
            if err.code not in (0, None):
                raise RuntimeError(f"{' '.join(argv)} failed: {sink.getvalue()[-500:]}") from None


@dataclass(frozen=True)
class Fixtures:
    """Valid files the variants start from, made once per session under `root` (readable by anyone:
    cases that drop root to `nobody` read them too). `results_db` is None when no sweep could
    run."""

    root: Path
    models: dict[str, Path]
    results_db: Path | None

    @classmethod
    def make(cls, root: Path) -> Fixtures:
        root.mkdir(parents=True, exist_ok=True)
        os.chmod(root, 0o755)
        models = {}
        for kind, argv in BASE_ARGV.items():
            models[kind] = root / f"{kind}.safetensors"
            _cli([*argv, str(models[kind])])
        export = ["export", "transformer-lens", "--model", str(models["transformer"])]
        _cli(
            [*export, "--out", str(root / "transformer-tl")]
        )  # the base of `import transformer-lens`
        return cls(root, models, _results_db(root / "results.sqlite"))

    def blob(self, kind: str) -> bytes:
        return self.models[kind].read_bytes()


def _results_db(path: Path) -> Path | None:
    """A results database with two finished runs of experiment "e" (a tiny Boolean sweep)."""
    argv = ["sweep", "run", "--db", str(path), "--name", "e", "--task", "boolean", "--workers", "1"]
    argv += ["--fixed", "n=2", "--fixed", "degree=1", "--fixed", "heads=1", "--fixed", "steps=2"]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")]),
    }
    try:
        done = subprocess.run(
            [sys.executable, "-m", "headcount.cli", *argv, "--seeds", "0,1"],
            capture_output=True,
            timeout=300,
            env=env,
            cwd=path.parent,
        )
    except subprocess.TimeoutExpired:
        return None
    return path if done.returncode == 0 and path.exists() else None


# Variants after which the file may still be a valid model: answering (exit 0) is as right as
# refusing.
MAY_BE_VALID = {
    "garbage after the data",
    "80,000 tensor entries",
    "headcount 20 MB",
    "info 'abc'",
    "info a list",
    "info 100k-deep list",
    "info 100k-deep object",
    "info 5000-digit number",
    "info Infinity",
    "all weights NaN",
    "all weights +inf",
    "weights 1e308",
    "weights float32",
    "weights int64",
    "an unknown extra tensor",
    "5000 heads",
    "layer heads 1.5",
    "mask full",
    "scores NaN",
    "values +inf",
    "80,000 heads",
    "readout 100,000 terms",
    "info function 'majority'",
    "w0 JSON 1.5",
    "w0 JSON true",
    "info n -1",
    "info n 'abc'",
    "info n 1e999",
    "info n 5000 digits",
    "info n 10^9",
    "the valid file",
    "a symlink to the valid file",
    "decoder config 100k-deep",
    "decoder config 5000 digits",
    "v0[0] = '1000000000000000'…",
    "readout coefficient '1000000000000000'…",
    "sparse 4 GiB extra tensor",
    "W_E 1.2 GiB (sparse)",
    "sparse 64 GiB extra tensor (no --max-memory)",
    "duplicate tensor keys",  # the last one wins in both parsers: the file reads as the valid one
} | {f"w0 = {short(t)}" for t in VALID_RATIONALS}
# predict, certify and evaluate take any induction model: a one-layer table file is valid there
VALID_ELSEWHERE = {
    ("a table file", "induction predict"),
    ("a table file", "induction certify"),
    ("a table file", "evaluate"),
    ("a table file", "analyze patterns"),  # a table model's one head has attention patterns too
    (
        "a table file",
        "analyze heads",
    ),  # the one-layer construction's table: its head is read the same way
    (
        "W_pos 1 row",
        "export transformer-lens",
    ),  # a model of context 1: valid, though no input of 4 fits
}


def _special(folder: Path, base: Path, kind: str) -> dict[str, tuple[Path, bool]]:
    """Files made on disk (payloads, bombs, sparse, FIFOs, links): name → (path, pass
    --max-memory)."""
    marker = folder / "MARKER"  # whoever unpickles a payload creates it
    made: dict[str, tuple[Path, bool]] = {}

    def put(name: str, path: Path, write, max_memory: bool = True) -> None:
        try:
            write(path)
        except Exception:  # a maker this machine cannot run (no torch, no FIFOs): fewer cases
            return
        made[name] = (path, max_memory)

    blob = base.read_bytes()
    put(
        "pickle payload as .safetensors",
        folder / "p1.safetensors",
        lambda p: p.write_bytes(st.pickle_payload(str(marker))),
    )
    put(
        "pickle payload as .pkl",
        folder / "p2.pkl",
        lambda p: p.write_bytes(st.pickle_payload(str(marker))),
    )
    put("torch.save payload (.pt)", folder / "p3.pt", lambda p: st.torch_payload(p, str(marker)))
    put(
        "numpy object-array payload (.npy)",
        folder / "p4.npy",
        lambda p: st.numpy_payload(p, str(marker)),
    )
    put("zip bomb-lite (200 MB inflated)", folder / "bomb.safetensors", st.zip_bomb_lite)
    big = [2**29]
    put(
        "sparse 4 GiB extra tensor",
        folder / "s1.safetensors",
        lambda p: st.sparse_tensor_file(p, blob, "zz", big),
    )
    # without --max-memory, the default limit (half this machine's memory) must refuse 64 and 152
    # GiB
    put(
        "sparse 64 GiB extra tensor (no --max-memory)",
        folder / "s3.safetensors",
        lambda p: st.sparse_tensor_file(p, blob, "zz", [2**33]),
        max_memory=False,
    )
    if kind == "transformer":
        width = st.parse(blob)[0]["W_E"]["shape"][1]
        put(
            "W_E 1.2 GiB (sparse)",
            folder / "s2.safetensors",
            lambda p: st.sparse_tensor_file(p, blob, "W_E", [2**23, width]),
        )
        put(
            "W_E 152 GiB (sparse, no --max-memory)",
            folder / "s4.safetensors",
            lambda p: st.sparse_tensor_file(p, blob, "W_E", [2**30, width]),
            max_memory=False,
        )
    put("the valid file", base, lambda p: None)
    put("a symlink to the valid file", folder / "link.safetensors", lambda p: os.symlink(base, p))
    put("a FIFO named .safetensors", folder / "fifo.safetensors", os.mkfifo)
    put(
        "a symlink to a FIFO",
        folder / "fifo-link.safetensors",
        lambda p: os.symlink(folder / "fifo.safetensors", p),
    )
    put("a symlink to /dev/zero", folder / "zero.safetensors", lambda p: os.symlink("/dev/zero", p))
    put("a directory named .safetensors", folder / "dir.safetensors", lambda p: p.mkdir())
    put(
        "a dangling symlink",
        folder / "dangling.safetensors",
        lambda p: os.symlink(folder / "missing", p),
    )
    return made


def model_file_cases(fixtures: Fixtures) -> list[Case]:
    """Every variant of every kind, for every command that reads that kind (files under
    root/files)."""
    cases = []
    blobs = {kind: fixtures.blob(kind) for kind in fixtures.models}
    for kind in fixtures.models:
        folder = fixtures.root / "files" / kind
        folder.mkdir(parents=True, exist_ok=True)
        blob = blobs[kind]
        files: dict[str, tuple[Path, bool]] = {}
        for i, (name, make) in enumerate(variants(blobs, kind).items()):
            path = folder / f"v{i}.safetensors"
            try:
                path.write_bytes(make(blob))
            except (
                KeyError,
                IndexError,
                TypeError,
                ValueError,
            ):  # a variant that does not fit this kind
                continue
            files[name] = (path, True)
        files |= _special(folder, fixtures.models[kind], kind)
        for target in (t for t in TARGETS if t.kind == kind):
            for name, (path, max_memory) in files.items():
                cases.append(
                    Case(
                        target.command.split()[0],
                        target.command,
                        "--model",
                        f"{kind} file: {name}",
                        target.argv(str(path), max_memory),
                        kind="model-file",
                        valid_ok=name in MAY_BE_VALID or (name, target.command) in VALID_ELSEWHERE,
                        markers=(str(folder / "MARKER"),),
                        forbidden=(ZEN, NAN_LABEL)
                        if name == "all weights NaN" and kind == "transformer"
                        else (ZEN,),
                    )
                )
    return cases
