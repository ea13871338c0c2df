"""The fuzz harness: every case is one `headcount.cli.main(argv)` call in a forked child with an
address-space cap and a CPU-time budget; the parent records what happened and judges it against the
CLI contract.

    outcomes = run_cases(cases)                # [Outcome], in the order of `cases`
    report = Report.of(cases, outcomes)         # per-group counts, failures grouped by command
    assert not report.failures, report.describe()

How a case runs. `run_cases` starts one clean interpreter (the *zygote*: `python -m
tests.fuzz.harness IN OUT`), which imports headcount and the libraries its commands load, then forks
one child per case, at most `jobs` at a time. So no case pays for the imports, and no case inherits
the state of the test process (pytest's capture, torch or OpenMP thread pools, signal handlers). The
child puts itself in its own process group, sends stdout and stderr to files and stdin to /dev/null,
changes to its own scratch folder, caps its address space (RLIMIT_AS: the zygote's size + 2 GiB) and
its CPU time (RLIMIT_CPU, below), drops root to `nobody` when the case asks (so read-only files are
read-only), calls main and exits with its code. The zygote records its exit code or signal, wall
time, CPU time, peak memory, its output, and whether a marker file (proof of code execution)
appeared, then kills the child's process group (workers it left).

A *hang* is judged by CPU time, not by the clock, so that no verdict depends on how busy the machine
is: a case may use `cpu_budget(group)` seconds of CPU (TIMEOUT_S; SLOW_FACTOR times that for
SLOW_GROUPS). The child sets RLIMIT_CPU to it (soft limit, rounded up to whole seconds: the kernel
sends SIGXCPU; hard limit HARD_MARGIN_S above: SIGKILL, should SIGXCPU be caught or ignored), and
`judge` calls a hang any child killed by SIGXCPU and any child whose CPU time (ru_utime + ru_stime
of wait4: the child and the processes it waited for) exceeds the budget — which also covers the
SIGKILL at the hard limit and budgets under one second (a budget of 0 makes every case a hang: the
harness's self-test). RLIMIT_CPU is per process and counts every thread: a command running four
torch threads spends its budget four times as fast as the clock, and each worker process a case
starts (sweep workers) has a budget of its own, which the kernel enforces in that worker; the
child's total, judged afterwards, includes the workers it reaped. A case that blocks without using
CPU (reading a FIFO, waiting for a worker that never starts) would never reach its CPU limit, so the
zygote also kills the group of a child still running after a wall-clock *backstop*: WALL_FACTOR
times the budget (at least WALL_MIN_S), generous enough that a machine at load 10 (every case
sharing a core with ten others) does not reach it, and judged a hang too (`timed_out`).

The contract (`judge`): exit 2 with exactly one line on stderr (a refusal), or exit 0 — then with
--json exactly one JSON object on stdout — where the case allows valid input; never a traceback,
exit 1 (an internal error), a hang, a memory blow-up (a MemoryError or the process killed), a marker
file, forbidden text on stdout (a module run by importing it), or a write outside its targets: a new
entry in its folder that no argument names (`stray_writes`; DEFAULT_WRITES lists what commands write
unasked).
"""

from __future__ import annotations

import json
import math
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# CPU seconds per case (the module docstring): a bounded command answers tiny valid input (or
# refuses) well within TIMEOUT_S of CPU; the groups that train or start worker processes
# (SLOW_GROUPS) get SLOW_FACTOR times as much. HEADCOUNT_FUZZ_TIMEOUT sets the base.
TIMEOUT_S = float(os.environ.get("HEADCOUNT_FUZZ_TIMEOUT", "10"))
SLOW_GROUPS = {"train", "sweep", "experiment", "reproduce"}
SLOW_FACTOR = 4
HARD_MARGIN_S = (
    5  # RLIMIT_CPU's hard limit (SIGKILL) this many CPU seconds above the soft one (SIGXCPU)
)
# The wall-clock backstop for a case that blocks without using CPU: WALL_FACTOR × its CPU budget, at
# least WALL_MIN_S. At load 10 a case gets about a tenth of a core, so a case within its CPU budget
# ends before it.
WALL_FACTOR = 10
WALL_MIN_S = 60.0
CAP_MARGIN = 2 * 2**30  # the address-space cap: the zygote's own size + 2 GiB
MAX_MEMORY = "1G"  # the --max-memory most cases pass, so that the guard, not the OS, refuses
ESCAPED = 99  # the child's exit code when an exception escaped main()
_KEEP = 4000  # characters of stdout / stderr kept for the report


@dataclass(frozen=True)
class Case:
    """One call of main(argv). group/command/option/value say what is fuzzed (for the report)."""

    group: str  # induction, minmax, boolean, train, sweep, experiment, reproduce, global
    command: str  # "induction solve"
    option: str  # "--hops", or "file:<variant>", "combo:<what>"
    value: str  # a short label of the value
    argv: tuple[str, ...]
    kind: str = "option"  # option | combo | model-file | db | sweep-file
    valid_ok: bool = True  # exit 0 (with one JSON object under --json) is a correct answer
    markers: tuple[str, ...] = ()  # paths that must not exist after the run (code execution)
    forbidden: tuple[str, ...] = ()  # text that must not appear on stdout
    env: tuple[tuple[str, str], ...] = ()  # extra environment variables
    as_nobody: bool = (
        False  # run as an unprivileged user when root (read-only files stay read-only)
    )


def cpu_budget(group: str, timeout: float = TIMEOUT_S) -> float:
    """The CPU seconds a case of `group` may use (`timeout`: the base, TIMEOUT_S)."""
    return timeout * (SLOW_FACTOR if group in SLOW_GROUPS else 1)


def wall_backstop(budget: float) -> float:
    """The wall-clock seconds after which a case with CPU budget `budget` is killed as blocked."""
    return max(WALL_FACTOR * budget, WALL_MIN_S)


@dataclass
class Outcome:
    code: int | None = None  # exit code (None when killed by a signal or the wall-clock backstop)
    signal: int | None = None
    timed_out: bool = (
        False  # killed by the wall-clock backstop (blocked without using its CPU budget)
    )
    wall_s: float = 0.0
    cpu_s: float = (
        0.0  # user + system CPU seconds: the child and the processes it waited for (wait4)
    )
    cpu_budget_s: float | None = None  # the CPU seconds it was allowed (None: not judged on CPU)
    max_rss_mb: float = 0.0
    stdout: str = ""  # the first _KEEP characters
    stderr: str = ""  # the first and last _KEEP/2 characters
    stdout_len: int = 0
    one_json_object: bool = False  # stdout is exactly one JSON object
    markers_hit: list[str] = field(default_factory=list)
    forbidden_hit: list[str] = field(default_factory=list)
    stray: list[str] = field(
        default_factory=list
    )  # new entries of its folder that no argument names


# --------------------------------------------------------------------------------------------------
# The contract


def judge(case: Case, out: Outcome) -> tuple[str, str]:
    """('refused' | 'passed' | <failure kind>, detail). Failure kinds: code-execution, hang, memory,
    crash, traceback, internal-error, stderr-lines, json, accepted, exit-code, wrote-outside."""
    err = out.stderr.strip()
    first = (err.splitlines() or [""])[0][:200]
    if out.markers_hit or out.forbidden_hit:
        return (
            "code-execution",
            f"marker files {out.markers_hit} / stdout shows {out.forbidden_hit}",
        )
    if out.stray:
        return (
            "wrote-outside",
            f"wrote {out.stray[:3]} into its folder, which no argument names: {first!r}",
        )
    if out.timed_out:
        return "hang", (
            f"blocked: no answer within {out.wall_s:.0f} s of wall-clock time, using "
            f"{out.cpu_s:.1f} s of "
            f"CPU (killed); stderr: {first!r}"
        )
    over = out.cpu_budget_s is not None and out.cpu_s > out.cpu_budget_s
    if out.signal == signal.SIGXCPU or over:
        how = (
            f"killed by {_signal_name(out.signal)}"
            if out.signal is not None
            else f"exit {out.code}"
        )
        budget = "its budget" if out.cpu_budget_s is None else f"{out.cpu_budget_s:g} s"
        return (
            "hang",
            f"used more than {budget} of CPU ({out.cpu_s:.1f} s, {how}); stderr: {first!r}",
        )
    if out.signal is not None:
        kind = "memory" if out.signal == signal.SIGKILL else "crash"
        return kind, f"killed by {_signal_name(out.signal)} (peak {out.max_rss_mb:.0f} MB)"
    if "MemoryError" in out.stderr or "out of memory" in err:
        return "memory", f"MemoryError (peak {out.max_rss_mb:.0f} MB): {first!r}"
    if "Traceback (most recent call last)" in out.stderr or "Traceback (most recent" in out.stdout:
        last = (err.splitlines() or [""])[-1][:200]
        return "traceback", f"exit {out.code}: {last!r}"
    if out.code == 2:
        lines = err.splitlines()
        if len(lines) != 1:
            return "stderr-lines", f"exit 2 with {len(lines)} lines on stderr: {first!r}"
        return "refused", first
    if out.code == 0:
        if not case.valid_ok:
            return "accepted", f"exit 0 on input that must be refused; stdout: {out.stdout[:150]!r}"
        if "--json" in case.argv and not out.one_json_object:
            return "json", f"exit 0 but stdout is not one JSON object: {out.stdout[:150]!r}"
        return "passed", ""
    if out.code == 1:
        return "internal-error", first
    return "exit-code", f"exit {out.code}: {first!r}"


def _signal_name(number: int | None) -> str:
    return signal.Signals(number).name if number in signal.valid_signals() else str(number)


# --------------------------------------------------------------------------------------------------
# The zygote: forks one child per case


def _preload() -> None:
    """Import what the commands import, once, before any fork (errors surface in the cases
    instead)."""
    import importlib

    for name in (
        "headcount.cli",
        "numpy",
        "scipy.optimize",
        "flint",
        "safetensors.numpy",
        "torch",
        "headcount.induction.certification",
        "headcount.induction.outputs",
        "headcount.induction.construction",
        "headcount.induction.lower_bound.protocol",
        "headcount.induction.lower_bound.refute",
        "headcount.minmax.certification",
        "headcount.minmax.single_head",
        "headcount.minmax.construction",
        "headcount.minmax.search",
        "headcount.boolean.certification",
        "headcount.boolean.threshold",
        "headcount.boolean.search",
        "headcount.learn.train",
        "headcount.learn.sweep",
        "typer._adapters",  # typer imports it (and pydantic) on the first path option it converts
        "pydantic._internal._validators",
    ):
        try:
            importlib.import_module(name)
        except Exception:  # a module another change breaks: its cases will say so
            pass
    if os.geteuid() == 0:
        _preload_stdlib()
        _preload_packages(
            ("headcount", "typer", "click", "rich", "safetensors", "pydantic", "pydantic_core")
        )


_NOT_PRELOADED = {
    "antigravity",
    "this",
    "idlelib",
    "tkinter",
    "turtle",
    "turtledemo",
    "__main__",
    "lib2to3",
}
_NOT_PRELOADED |= {"pydoc_data", "ensurepip", "venv", "test", "unittest"}


def _preload_stdlib() -> None:
    """Import the whole standard library (< 1 s): a case run as `nobody` cannot read the
    interpreter's files when they live in root's home (pyenv), so every module it may import lazily
    must be loaded."""
    import contextlib
    import importlib
    import io
    import pkgutil
    import warnings

    def load(name: str):
        try:
            return importlib.import_module(name)
        except BaseException:  # platform modules (Windows, macOS), missing optional libraries
            return None

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for name in sorted(sys.stdlib_module_names - _NOT_PRELOADED):
                if name.startswith(("_test", "xx")) or (module := load(name)) is None:
                    continue
                for info in pkgutil.walk_packages(getattr(module, "__path__", []), name + "."):
                    if not any(
                        part in info.name
                        for part in (".test", "tests", "idle", "__main__", "tkinter")
                    ):
                        load(info.name)


def _preload_packages(names: tuple[str, ...]) -> None:
    """Import every submodule of the packages the commands load lazily (typer imports its vendored
    click per command): a case run as `nobody` cannot read a virtual environment in a folder only
    root may enter (a clone in `mktemp -d`, mode 0700), so nothing may be left to import from
    disk."""
    import contextlib
    import importlib
    import io
    import pkgutil
    import warnings

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for name in names:
                try:
                    package = importlib.import_module(name)
                except BaseException:  # not installed (click is vendored in newer typer)
                    continue
                for info in pkgutil.walk_packages(getattr(package, "__path__", []), name + "."):
                    with contextlib.suppress(
                        BaseException
                    ):  # optional extras that are not installed
                        importlib.import_module(info.name)


def _vm_size() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    return 2**30


def _nobody() -> tuple[int, int]:
    import pwd

    try:
        entry = pwd.getpwnam("nobody")
        return entry.pw_uid, entry.pw_gid
    except KeyError:
        return 65534, 65534


def make_fixtures(folder: str) -> None:
    """What relative paths in cases name (values.READ_PATHS / WRITE_PATHS): made in every case's
    folder."""
    d = Path(folder)
    (d / "dir").mkdir()
    os.mkfifo(d / "fifo")
    os.symlink("missing", d / "dangling")
    os.symlink("/dev/zero", d / "zero")
    os.symlink("loop", d / "loop")
    (d / "text.txt").write_text("hello\n")
    (d / "ro").mkdir()
    os.chmod(d / "ro", 0o555)
    (d / "unreadable").write_text("secret\n")
    os.chmod(d / "unreadable", 0)


def _cap_cpu(budget: float) -> None:
    """RLIMIT_CPU: SIGXCPU after `budget` CPU seconds (rounded up: the limit counts whole seconds; 0
    sends it at once), SIGKILL HARD_MARGIN_S later; no core file (SIGXCPU's default action dumps
    one)."""
    soft, hard = math.ceil(budget), math.ceil(budget) + HARD_MARGIN_S
    _, old_hard = resource.getrlimit(resource.RLIMIT_CPU)
    if old_hard != resource.RLIM_INFINITY:  # never above a limit this process may not raise
        soft, hard = min(soft, old_hard), min(hard, old_hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _child(case: dict, out_path: str, err_path: str, workdir: str, cap: int, budget: float) -> None:
    """In the forked child: isolate, cap memory and CPU time, run main, exit with its code (never
    returns)."""
    code = ESCAPED
    try:
        os.setpgid(0, 0)
        for fd, path, flags in (
            (1, out_path, os.O_WRONLY),
            (2, err_path, os.O_WRONLY),
            (0, os.devnull, 0),
        ):
            opened = os.open(path, flags | (os.O_CREAT | os.O_TRUNC if fd else os.O_RDONLY), 0o644)
            os.dup2(opened, fd)
            os.close(opened)
        os.chdir(workdir)
        os.environ.pop("HEADCOUNT_DEBUG", None)
        os.environ.pop("HEADCOUNT_MAX_MEMORY", None)
        os.environ.update(dict(case["env"]))
        if case["as_nobody"] and os.geteuid() == 0:
            for var in (
                "HOME",
                "MPLCONFIGDIR",
                "XDG_CACHE_HOME",
                "XDG_CONFIG_HOME",
            ):  # root's home is closed
                os.environ[var] = workdir
            uid, gid = _nobody()
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        _cap_cpu(budget)
        from headcount.cli import main

        try:
            main(list(case["argv"]))
            code = 0
        except SystemExit as exit_:
            if exit_.code is None or isinstance(exit_.code, int):
                code = exit_.code or 0
            else:
                print(exit_.code, file=sys.stderr)
                code = 1
    except BaseException:  # escaped the error boundary: the report shows the traceback
        try:
            traceback.print_exc()
        except BaseException:
            pass
        code = ESCAPED
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:
            pass
        os._exit(code & 0xFF)


def _read(path: str, keep: int) -> tuple[str, int]:
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            if size <= keep:
                return f.read().decode("utf-8", "backslashreplace"), size
            head = f.read(keep // 2).decode("utf-8", "backslashreplace")
            f.seek(size - keep // 2)
            return head + " … " + f.read().decode("utf-8", "backslashreplace"), size
    except OSError:
        return "", 0


def _one_json_object(path: str) -> bool:
    try:
        with open(path, encoding="utf-8") as f:
            return isinstance(json.loads(f.read()), dict)
    except (OSError, ValueError, RecursionError):
        return False


# What a case may leave in its folder without naming it: the defaults of commands that write without
# being told where (reproduce's report, the results database) and the caches of a HOME set to the
# folder.
DEFAULT_WRITES = {
    "headcount-report",
    "headcount-results.sqlite",
    ".cache",
    ".config",
    ".matplotlib",
}
_COMPANIONS = ("", "-wal", "-shm", "-journal")  # SQLite's files beside a database


def stray_writes(argv: list[str], before: set[str], workdir: str) -> list[str]:
    """The entries of `workdir` a case made (not in `before`) that neither an argument (a relative
    path, or its first folder) nor DEFAULT_WRITES explains: a write outside the target it was
    given."""
    values = [
        a.split("=", 1)[1] if a.startswith("--") and "=" in a else a for a in argv
    ]  # --out=PATH
    relative = [os.path.normpath(a) for a in values if a and not a.startswith("/")]
    if (
        "." in relative
    ):  # the case's folder itself is named (--out .): whatever it writes there is named
        return []
    named = {part for a in relative for part in (a, a.split("/", 1)[0])}
    allowed = {n + c for n in named | DEFAULT_WRITES for c in _COMPANIONS}
    try:
        made = set(os.listdir(workdir)) - before
    except OSError:
        return []
    return sorted(made - allowed)


def _finish(case: dict, out: Outcome, base: str, workdir: str, before: set[str]) -> None:
    out.stray = stray_writes(list(case["argv"]), before, workdir)
    out.stdout, out.stdout_len = _read(f"{base}.out", _KEEP)
    out.stderr, _ = _read(f"{base}.err", _KEEP)
    if out.code == 0 and out.stdout_len < 200 * 2**20:
        out.one_json_object = _one_json_object(f"{base}.out")
    out.markers_hit = [m for m in case["markers"] if os.path.lexists(m)]
    out.forbidden_hit = [t for t in case["forbidden"] if t in out.stdout]
    for suffix in (".out", ".err"):
        Path(base + suffix).unlink(missing_ok=True)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def zygote(cases: list[dict], scratch: str, timeout: float, jobs: int) -> list[Outcome]:
    """Run every case in a forked child, at most `jobs` at once (see the module docstring)."""
    _preload()
    cap = _vm_size() + int(os.environ.get("HEADCOUNT_FUZZ_CAP_MARGIN", CAP_MARGIN))
    outcomes = [Outcome() for _ in cases]
    pending = list(range(len(cases)))[::-1]
    running: dict[
        int, tuple
    ] = {}  # pid → (case, start, its files' base path, its folder, what was in it)
    while pending or running:
        while pending and len(running) < jobs:
            i = pending.pop()
            workdir = os.path.join(scratch, f"case{i}")
            os.makedirs(workdir)
            os.chmod(workdir, 0o777)
            make_fixtures(workdir)
            before = set(os.listdir(workdir))
            base = os.path.join(scratch, f"io{i}")
            sys.stdout.flush()
            sys.stderr.flush()
            outcomes[i].cpu_budget_s = cpu_budget(cases[i]["group"], timeout)
            pid = os.fork()
            if pid == 0:
                _child(
                    cases[i], base + ".out", base + ".err", workdir, cap, outcomes[i].cpu_budget_s
                )
            running[pid] = (i, time.monotonic(), base, workdir, before)
        for pid, (i, start, base, workdir, before) in list(running.items()):
            done, status, usage = os.wait4(pid, os.WNOHANG)
            out = outcomes[i]
            if done == 0:
                if time.monotonic() - start <= wall_backstop(out.cpu_budget_s):
                    continue
                _kill_group(pid)  # blocked: the CPU limit would never stop it
                _, status, usage = os.wait4(pid, 0)
                out.timed_out = True
            _kill_group(pid)  # workers it started
            out.wall_s = time.monotonic() - start
            out.cpu_s = usage.ru_utime + usage.ru_stime
            out.max_rss_mb = usage.ru_maxrss / 1024
            if not out.timed_out:
                if os.WIFSIGNALED(status):
                    out.signal = os.WTERMSIG(status)
                else:
                    out.code = os.WEXITSTATUS(status)
            _finish(cases[i], out, base, workdir, before)
            del running[pid]
        time.sleep(0.005)
    return outcomes


def run_cases(
    cases: list[Case], timeout: float = TIMEOUT_S, jobs: int | None = None
) -> list[Outcome]:
    """Run `cases` in a fresh zygote interpreter; their outcomes in the same order. `timeout` is the
    base CPU budget in seconds (cpu_budget); a budget of 0 makes every case a hang."""
    # one more child than CPUs: many cases wait (on a FIFO, a timeout, a worker start) rather than
    # compute
    jobs = jobs or int(os.environ.get("HEADCOUNT_FUZZ_JOBS", "0")) or (os.cpu_count() or 2) + 1
    with tempfile.TemporaryDirectory(prefix="headcount-fuzz-run-") as scratch:
        os.chmod(scratch, 0o755)
        spec, result = Path(scratch, "cases.json"), Path(scratch, "outcomes.json")
        spec.write_text(
            json.dumps({"cases": [asdict(c) for c in cases], "timeout": timeout, "jobs": jobs}),
            encoding="utf-8",
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("HEADCOUNT_") or "FUZZ" in k}
        env["PYTHONPATH"] = os.pathsep.join(
            [str(REPO), str(REPO / "src"), env.get("PYTHONPATH", "")]
        )
        proc = subprocess.run(
            [sys.executable, "-m", "tests.fuzz.harness", str(spec), str(result)],
            cwd=scratch,
            env=env,
            capture_output=True,
            text=True,
            # a backstop for the zygote itself, never reached while it works: as if every case ran
            # to its wall-clock backstop (each generous for a machine at load 10), plus the imports
            timeout=sum(wall_backstop(cpu_budget(c.group, timeout)) for c in cases) / jobs + 600,
        )
        if proc.returncode != 0 or not result.exists():
            raise RuntimeError(
                f"fuzz zygote failed (exit {proc.returncode}): {proc.stderr[-3000:]}"
            )
        return [Outcome(**o) for o in json.loads(result.read_text(encoding="utf-8"))]


# --------------------------------------------------------------------------------------------------
# The report


@dataclass
class Report:
    # "group / kind" → Counter(cases, refused, passed, failed; wall_s, cpu_s summed; cpu_max)
    counts: dict[str, Counter]
    failures: list[tuple[Case, str, str]]  # (case, failure kind, detail)

    @classmethod
    def of(cls, cases: list[Case], outcomes: list[Outcome]) -> Report:
        counts: dict[str, Counter] = defaultdict(Counter)
        failures = []
        for case, out in zip(cases, outcomes, strict=True):
            verdict, detail = judge(case, out)
            row = counts[f"{case.group} / {case.kind}"]
            row["cases"] += 1
            row[verdict if verdict in ("refused", "passed") else "failed"] += 1
            row["wall_s"] += out.wall_s
            row["cpu_s"] += out.cpu_s
            row["cpu_max"] = max(row["cpu_max"], out.cpu_s)
            if verdict not in ("refused", "passed"):
                failures.append((case, verdict, detail))
        return cls(dict(counts), failures)

    def summary(self, title: str) -> str:
        """One line per command group and input kind: cases, refusals, passes, failures, the seconds
        its children ran and the CPU seconds they used (summed: what the group costs), and the most
        CPU seconds one case used (to compare with its budget, cpu_budget)."""
        head = (
            f"{'group / kind':32} {'cases':>6} {'refused':>8} {'passed':>7} {'failed':>7} "
            f"{'child s':>8}"
        )
        lines = [f"fuzz {title}: {head} {'cpu s':>7} {'max cpu':>7}"]
        total: Counter = Counter()
        for key in [*sorted(self.counts), "TOTAL"]:
            row = total if key == "TOTAL" else self.counts[key]
            if key != "TOTAL":
                total.update({k: v for k, v in row.items() if k != "cpu_max"})
                total["cpu_max"] = max(total["cpu_max"], row["cpu_max"])
            counts = f"{row['cases']:6} {row['refused']:8} {row['passed']:7} {row['failed']:7}"
            times = f"{row['wall_s']:8.0f} {row['cpu_s']:7.0f} {row['cpu_max']:7.1f}"
            lines.append(f"fuzz {title}: {key:32} {counts} {times}")
        kinds = Counter(kind for _, kind, _ in self.failures)
        if kinds:
            lines.append(f"fuzz {title}: failures by kind: {dict(sorted(kinds.items()))}")
        return "\n".join(lines)

    def describe(self, limit: int = 400) -> str:
        """Every failure, grouped by command, then kind: option = value → what happened."""
        grouped: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
        for case, kind, detail in self.failures:
            grouped[case.command][kind].append(f"{case.option} = {case.value}: {detail[:limit]}")
        parts = [f"{len(self.failures)} fuzz failures"]
        for command in sorted(grouped):
            parts.append(f"== {command}")
            for kind in sorted(grouped[command]):
                items = grouped[command][kind]
                parts.append(f"  -- {kind} ({len(items)})")
                parts.extend(f"     {item}" for item in items)
        return "\n".join(parts)

    def to_json(self) -> dict:
        return {
            "counts": {k: dict(v) for k, v in self.counts.items()},
            "failures": [
                {"command": c.command, "option": c.option, "value": c.value, "kind": k, "detail": d}
                for c, k, d in self.failures
            ],
        }


def check(cases: list[Case], title: str, timeout: float = TIMEOUT_S) -> Report:
    """Run the cases, print the per-group summary (shown with -s or in the terminal summary), and
    write the full report to $HEADCOUNT_FUZZ_REPORT_DIR/<title>.json when that is set."""
    report = Report.of(cases, run_cases(cases, timeout))
    print("\n" + report.summary(title))
    SUMMARIES.append(report.summary(title))
    folder = os.environ.get("HEADCOUNT_FUZZ_REPORT_DIR")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        Path(folder, f"{title}.json").write_text(
            json.dumps(report.to_json(), indent=1), encoding="utf-8"
        )
    return report


SUMMARIES: list[str] = []  # what the session printed, for the terminal summary (conftest.py)


def label(value: str, limit: int = 40) -> str:
    """A short, readable label of a (possibly huge or odd) value."""
    if len(value) > limit:
        return f"{value[:12]!r}…({len(value)} chars)"
    return repr(value)


def _main(argv: list[str]) -> int:
    spec = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    sys.stdout.reconfigure(encoding="utf-8", errors="backslashreplace")
    sys.stderr.reconfigure(encoding="utf-8", errors="backslashreplace")
    scratch = tempfile.mkdtemp(prefix="headcount-fuzz-cases-")
    os.chmod(scratch, 0o777)
    try:
        outcomes = zygote(spec["cases"], scratch, float(spec["timeout"]), int(spec["jobs"]))
    finally:
        subprocess.run(["rm", "-rf", scratch], check=False)
    Path(argv[1]).write_text(json.dumps([asdict(o) for o in outcomes]), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
