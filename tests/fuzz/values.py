"""Hostile values by kind (deterministic): what the option generators substitute, one at a time,
into a valid command. Each entry is (label, value); labels are short so the report stays
readable."""

from __future__ import annotations

from tests.fuzz.harness import label


def _pairs(values: list[str]) -> list[tuple[str, str]]:
    return [(label(v), v) for v in values]


BIG = ["1000000000", "1000000000000", str(2**63), str(2**64), str(-(2**63) - 1), "1" + "0" * 100]
WEIRD = ["nan", "inf", "", "abc", "x" * 100_000]

INT = _pairs(["0", "-1", *BIG, *WEIRD, "1.5", "٣", "9" * 5000])
FLOAT = _pairs(
    [
        "0",
        "-1",
        "nan",
        "inf",
        "-inf",
        "1e308",
        "1e400",
        "1e-320",
        "1" + "0" * 400,
        "",
        "abc",
        "x" * 100_000,
    ]
)
STR = _pairs(
    ["", " ", "nan", "ünï✓💥", "\u202e\u200b", "a\nb", "x" * 100_000, "1e10000000", "--json"]
    + ["../../../etc/passwd", "%s%n{0}{__class__}"]
)
PRECISION = STR + _pairs(
    [
        "fixed:0",
        "fixed:-1",
        "fixed:61",
        "fixed:10000",
        f"fixed:{2**64}",
        "fixed:nan",
        "fixed:",
        "fixed:1.5",
    ]
    + ["fixed:" + "9" * 5000, "FLOAT64", "float8", "exact:1", "fixed:١٠", "fixed:1e3"]
)
FUNCTION = STR + _pairs(
    [
        "threshold:-1",
        "threshold:0",
        "threshold:1000000000",
        "threshold:1" + "0" * 100,
        f"exact:{2**64}",
    ]
    + [
        "mod:0",
        "mod:-1",
        "mod:1",
        "mod:1000000000",
        "F:",
        "F:" + "+-" * 50_000,
        "F:+-x",
        "threshold:nan",
    ]
    + ["threshold:", "xor:1", "majority:", "threshold:" + "9" * 5000, "F:" + "+" * 1000]
)
GRID = STR + _pairs(  # boolean minimal --grid: denominators c > −1, at most 32, bounded digits
    ["-1,1", "1/0", "1e9", "2," * 40, "10000000/3", "-3/4", "1,,2", "0x10", "½", "1/2/3"]
)
TOKENS = _pairs(
    ["", " ", ",", "0 1 x", "-1", "0 -0", "1.5", str(2**63), str(2**64), "9" * 5000, "nan", "٣ ٣"]
    + [
        "0\t1\n0",
        "1e9",
        "0x1",
        "0 1 " * 100_000,
        f"{2**62} " * 200_000,
        "0," * 200_000,
        "x" * 100_000,
    ]
)
TRUTH_TABLE = _pairs(
    ["", "01", "0110", "012", "000", "ab", "٠١", "0" * 2**20, "01" * 2**15, "1" * 2**24, "0110 "]
    + ["x" * 100_000, "nan", "0" * 2**12]
)
ITEMS = _pairs(  # --fixed / --grid entries
    [
        "",
        "=",
        "n",
        "n=",
        "=1",
        "n=nan",
        "n=inf",
        "n=1e10000000",
        "n=" + "9" * 5000,
        "n=" + "[" * 5000,
    ]
    + ["steps=1000000000", "task=x", "seed=1", "runner=os:system", "n=1=2", "ü=1", "x" * 100_000]
    + ["n=" + ",".join(str(i) for i in range(100_000)), "n=1,,2", "n=[1,2]", "n={a=1}"]
)
SEEDS = _pairs(
    [
        "",
        "nan",
        "-1",
        "0,0",
        "1000000000",
        str(2**64),
        ",".join(str(i) for i in range(100_000)),
        "a,b",
    ]
    + ["1e9", "0,,1", "٣", "x" * 100_000, "0-1000000000", str(2**63)]
)
SIZES = _pairs(  # --max-memory / HEADCOUNT_MAX_MEMORY
    [
        "",
        "0",
        "-1",
        "1",
        "1K",
        "nan",
        "inf",
        "1e9",
        "9" * 30,
        "1.5.5G",
        "10P",
        str(2**64),
        "G",
        "1 G",
    ]
    + ["٣G", "1Q", "0.000001G", "99999999999999999999P", "x" * 100_000, "1" + "0" * 400 + "G"]
)


# Paths: relative ones name what the harness makes in every case's folder (harness.FIXTURES);
# absolute ones are system paths. Cases that write, or that need a read-only file to be read-only,
# run as `nobody`.
READ_PATHS = [
    ("''", ""),
    ("'/'", "/"),
    ("'.'", "."),
    ("/dev/null", "/dev/null"),
    ("/dev/zero", "/dev/zero"),
    ("/proc/self/mem", "/proc/self/mem"),
    ("missing", "missing.file"),
    ("directory", "dir"),
    ("fifo", "fifo"),
    ("dangling symlink", "dangling"),
    ("symlink to /dev/zero", "zero"),
    ("symlink loop", "loop"),
    ("text file", "text.txt"),
    ("unreadable file", "unreadable"),
    ("5000-char name", "a" * 5000),
    ("3000-deep path", "/".join(["d"] * 3000)),
    ("under a file", "text.txt/x"),
    ("newline in name", "a\nb.file"),
]
WRITE_PATHS = [
    ("''", ""),
    ("'/'", "/"),
    ("'.'", "."),
    ("/dev/null", "/dev/null"),
    ("/dev/full", "/dev/full"),
    ("/proc/version", "/proc/version"),
    ("/proc/none/x", "/proc/none/x"),
    ("directory", "dir"),
    ("fifo", "fifo"),
    ("dangling symlink", "dangling"),
    ("symlink to /dev/zero", "zero"),
    ("read-only folder", "ro/x.out"),
    ("5000-char name", "a" * 5000),
    ("300-char name", "b" * 300),
    ("under a file", "text.txt/x"),
    ("newline in name", "w\nx.out"),
]


def needs_nobody(path: str) -> bool:
    """System paths (never written as root) and the read-only fixtures (root may write anything)."""
    return path.startswith("/") or path.startswith("ro/") or path == "unreadable"
