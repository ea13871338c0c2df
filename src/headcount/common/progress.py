"""The one progress bar: a rich bar on stderr when enabled, a no-op otherwise, behind one small
interface.

Progress never goes to stdout (a command's JSON output owns it, and sweep workers' callers may too).
Training shows its loss beside the bar (a field); a sweep shows how many runs failed in the bar's
description.

    with progress_bar(enabled, "train", total=steps, fields={"loss": "…"}) as bar:
        bar.update(completed=step + 1, loss=f"{loss:.4f}")
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any


class ProgressBar:
    """What the body of `progress_bar` updates; this base class does nothing (progress disabled)."""

    def update(
        self,
        *,
        advance: int | None = None,
        completed: int | None = None,
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
        advance: int | None = None,
        completed: int | None = None,
        description: str | None = None,
        **fields: Any,
    ) -> None:
        self._bar.update(
            self._task, advance=advance, completed=completed, description=description, **fields
        )


@contextmanager
def progress_bar(
    enabled: bool,
    label: str,
    total: int,
    *,
    completed: int = 0,
    fields: Mapping[str, str] | None = None,
    transient: bool = False,
) -> Iterator[ProgressBar]:
    """A bar over `total` items starting at `completed`, labelled `label`, with one "name value"
    column per entry of `fields` (their initial values); `transient` removes it from the terminal
    when done. Disabled: a ProgressBar whose update does nothing (rich is not even imported)."""
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
    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn()]
    columns += [TextColumn(f"{name} {{task.fields[{name}]}}") for name in fields]
    columns += [TimeElapsedColumn(), TimeRemainingColumn()]
    bar = Progress(*columns, console=Console(stderr=True), transient=transient)
    task = bar.add_task(label, total=total, completed=completed, **fields)
    with bar:
        yield _RichBar(bar, task)
