"""The one progress bar: a rich bar on stderr when enabled, a no-op otherwise, or counted steps as
text for a callable — behind one small interface.

Progress never goes to stdout (a command's JSON output owns it, and sweep workers' callers may too).
Training shows its loss beside the bar (a field); a sweep shows how many runs failed in the bar's
description.

    with progress_bar(enabled, "train", total=steps, fields={"loss": "…"}, unit="step") as bar:
        bar.update(completed=step + 1, loss=f"{loss:.4f}")

A library function's `progress` argument (Progress) is passed here as `enabled`: False, True (the
bar), or a callable that gets "step 400/2000" (`unit`, or else the label, and the count) — how
reproduce shows a claim's own progress (report.claims.Context.step). `counted` walks a sequence the
same way.

Training steps across processes: a sweep worker runs its runner inside `steps_reported_to(sink)`,
and the training loop takes `step_progress(progress)` — its own `progress` when on, else that sink —
so a run's steps reach the parent's bar although the runner was called without progress.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

# What a library function's `progress` takes: off, a bar on stderr, or a sink for step texts.
Progress = bool | Callable[[str], None]

# Seconds between two step texts sent to a callable (the first and the last always go): progress
# then costs nothing measurable, however often a loop updates.
REPORT_INTERVAL = 0.1

T = TypeVar("T")


# The sink of the innermost steps_reported_to (None: none): where training steps go when the
# trainer's own progress is off.
_STEP_SINK: ContextVar[Callable[[str], None] | None] = ContextVar("step_sink", default=None)


@contextmanager
def steps_reported_to(sink: Callable[[str], None]) -> Iterator[None]:
    """Within the block, step_progress(False) is `sink` (a sweep worker forwards its run's training
    steps to the parent this way)."""
    token = _STEP_SINK.set(sink)
    try:
        yield
    finally:
        _STEP_SINK.reset(token)


def step_progress(progress: Progress) -> Progress:
    """`progress` when it is on; otherwise the sink of an enclosing steps_reported_to, if any."""
    return progress or _STEP_SINK.get() or False


class ProgressBar:
    """What the body of `progress_bar` updates; this base class does nothing (progress disabled)."""

    def update(
        self,
        *,
        advance: float | None = None,
        completed: float | None = None,
        description: str | None = None,
        **fields: Any,
    ) -> None:
        """Move the bar by `advance` or to `completed`, relabel it, or set its named fields."""


class _RichBar(ProgressBar):
    def __init__(self, bar: Any, task: Any):
        self._bar, self._task = bar, task

    def update(
        self,
        *,
        advance: float | None = None,
        completed: float | None = None,
        description: str | None = None,
        **fields: Any,
    ) -> None:
        self._bar.update(
            self._task, advance=advance, completed=completed, description=description, **fields
        )


class _ReportedBar(ProgressBar):
    """Counted progress as text for a callable: "{unit} {done}/{total}", then " · {note}" when the
    bar has a note (update(note=…)), throttled (REPORT_INTERVAL)."""

    def __init__(
        self,
        report: Callable[[str], None],
        unit: str,
        total: float | None,
        completed: float,
        note: str | None,
    ):
        self._report, self._unit, self._total, self._done = report, unit, total, completed
        self._note = note or ""
        self._last = -REPORT_INTERVAL
        self._send(force=True)

    def update(
        self,
        *,
        advance: float | None = None,
        completed: float | None = None,
        description: str | None = None,
        **fields: Any,
    ) -> None:
        if completed is not None:
            self._done = completed
        if advance:
            self._done += advance
        if "note" in fields:
            self._note = str(fields["note"] or "")
        self._send(force=self._total is not None and self._done >= self._total)

    def _send(self, force: bool) -> None:
        now = time.monotonic()
        if force or now - self._last >= REPORT_INTERVAL:
            self._last = now
            of = "" if self._total is None else f"/{_count(self._total)}"
            note = f" · {self._note}" if self._note else ""
            self._report(f"{self._unit} {_count(self._done)}{of}{note}")


def _count(value: float) -> str:
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.1f}"


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours:d}:{minutes:02d}:{secs:02d}"


def _paced_remaining() -> Any:
    """A rich column for a bar whose units are estimated seconds of work (reproduce's recorded
    costs): the time left is the units left at the pace so far (units per second up to the last
    advance; 1 before any), less the time since that advance — it counts down between advances,
    where rich's own estimate (a 30 s window of advances) has none."""
    from rich.progress import ProgressColumn
    from rich.text import Text

    class PacedRemaining(ProgressColumn):
        def __init__(self) -> None:
            super().__init__()
            self.seen: dict[Any, tuple[float, float]] = {}  # task → (completed, elapsed) then

        def render(self, task: Any) -> Text:
            if task.total is None:
                return Text("", style="progress.remaining")
            elapsed = task.elapsed or 0.0
            done, at = self.seen.get(task.id, (0.0, 0.0))
            if task.completed != done:
                done, at = task.completed, elapsed
                self.seen[task.id] = (done, at)
            pace = done / at if done and at > 0 else 1.0
            left = 0.0 if task.finished else max(0.0, (task.total - done) / pace - (elapsed - at))
            return Text(_clock(left), style="progress.remaining")

    return PacedRemaining()


@contextmanager
def progress_bar(
    enabled: Progress,
    label: str,
    total: float | None,
    *,
    completed: float = 0,
    fields: Mapping[str, str] | None = None,
    transient: bool = False,
    unit: str | None = None,
    weighted: bool = False,
    note: str | None = None,
) -> Iterator[ProgressBar]:
    """A bar over `total` items (None: unknown) starting at `completed`, labelled `label`, with one
    "name value" column per entry of `fields` (their initial values); `transient` removes it from
    the terminal when done. `weighted`: the units are estimated seconds of work, not a count — no
    M/N column, and the time left is paced (_paced_remaining). `note`: a last column of free text
    (its initial value; update(note=…) changes it). Disabled: a ProgressBar whose update does
    nothing (rich is not even imported). A callable: it gets "{unit or label} {done}/{total}"
    texts, with " · {note}" after them when there is a note (_ReportedBar), instead of a bar."""
    if callable(enabled):
        yield _ReportedBar(enabled, unit or label, total, completed, note)
        return
    if not enabled:
        yield ProgressBar()
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    fields = dict(fields or {})
    columns: list[Any] = [TextColumn("{task.description}"), BarColumn()]
    columns += [] if weighted else [MofNCompleteColumn()]
    columns += [TextColumn(f"{name} {{task.fields[{name}]}}") for name in fields]
    columns += [TimeElapsedColumn(), _paced_remaining() if weighted else TimeRemainingColumn()]
    if note is not None:
        columns.append(TextColumn("{task.fields[note]}"))
        fields["note"] = note
    bar = Progress(*columns, console=Console(stderr=True), transient=transient)
    task = bar.add_task(label, total=total, completed=completed, **fields)
    with bar:
        yield _RichBar(bar, task)


def counted(
    items: Sequence[T], progress: Progress, label: str, unit: str | None = None
) -> Iterable[T]:
    """The items of `items`, one by one, with progress_bar's progress over them (a callable gets
    "{unit} 3/12" once three are done)."""
    with progress_bar(progress, label, len(items), unit=unit) as bar:
        for i, item in enumerate(items):
            if i:
                bar.update(completed=i)
            yield item
        bar.update(completed=len(items))
