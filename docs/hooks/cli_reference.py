"""MkDocs hook: the command-line reference (docs/cli.md), generated from the commands at build time.

`on_page_markdown` replaces the marker MARKER in cli.md with one section per command of the
`headcount` command tree (`typer.main.get_command(headcount.cli.app)`): its usage line, its help and
its options (hidden ones — the deprecated spellings of renamed options — left out). So the page
cannot drift from the code: a new command or option appears at the next build, and
tests/test_docs.py checks that the page names every command.

The walk uses only what the command objects expose (typer ships its own copy of click, so nothing is
imported from click itself).
"""

from __future__ import annotations

import html
import inspect
import re
from collections.abc import Iterator
from typing import Any

MARKER = "<!-- cli-reference -->"
PAGE = "cli.md"
ROOT = "headcount"


def root_command() -> Any:
    """The click command typer builds from the `headcount` app."""
    import typer.main

    from headcount.cli import app

    return typer.main.get_command(app)


def walk(command: Any, name: str = ROOT, parent: Any = None) -> Iterator[tuple[Any, Any]]:
    """(command, its context) for the command and every subcommand, depth first, in the order the
    command line lists them."""
    ctx = command.context_class(command, info_name=name, parent=parent)
    yield command, ctx
    subcommands = getattr(command, "commands", None)
    if subcommands is None:
        return
    for sub_name in command.list_commands(ctx):
        sub = command.get_command(ctx, sub_name)
        if sub is not None and not getattr(sub, "hidden", False):
            yield from walk(sub, sub_name, ctx)


def command_paths() -> list[str]:
    """Every command's full name, `headcount induction certify`, the root first."""
    return [ctx.command_path for _, ctx in walk(root_command())]


def plain(text: str | None) -> str:
    """Help text as the terminal shows it: rich markup resolved (`\\[` is a literal bracket),
    click's `\\f` cut honoured, indentation removed."""
    if not text:
        return ""
    text = inspect.cleandoc(text.split("\f", 1)[0])
    try:
        from rich.text import Text

        return Text.from_markup(text).plain
    except Exception:  # not markup after all: the text as written
        return text


def inline(text: str) -> str:
    """Plain text made safe inside a Markdown paragraph or list item."""
    text = html.escape(" ".join(text.split()), quote=False)
    return re.sub(r"([\\`*_\[\]])", r"\\\1", text)


def paragraphs(text: str) -> str:
    """Help text's paragraphs (blank-line separated) as Markdown paragraphs."""
    parts = [inline(p) for p in re.split(r"\n\s*\n", text) if p.strip()]
    return "\n\n".join(parts)


def option_line(param: Any, ctx: Any) -> str:
    """One Markdown list item: the option's spellings and value, then its help as `--help` shows
    it (with its [required] and [default: …] notes)."""
    record = param.get_help_record(ctx)
    if record is None:  # an argument without help
        return f"- `{param.human_readable_name}`"
    names, text = record
    raw = getattr(param, "help", None) or ""
    # the record is the help as written plus click's notes ("  [default: 0]", "  [required]"), which
    # are not markup: resolve the markup of the help alone
    notes = text[len(raw) :] if text.startswith(raw) else ""
    text = (plain(raw) + notes).strip() if notes or raw else plain(text)
    return f"- `{names}`" + (f": {inline(text)}" if text else "")


def command_section(command: Any, ctx: Any) -> str:
    """A command's section: heading, usage, help, arguments and options."""
    path = ctx.command_path
    depth = min(2 + path.count(" "), 4)
    lines = [f"{'#' * depth} `{path}`", ""]
    usage = command.get_usage(ctx).strip()
    lines += ["```text", usage, "```", ""]
    text = plain(command.help)
    if text:
        lines += [paragraphs(text), ""]
    params = [
        p
        for p in command.get_params(ctx)
        if not getattr(p, "hidden", False) and p.name != "help"  # --help: on every command
    ]
    arguments = [p for p in params if getattr(p, "param_type_name", "") == "argument"]
    options = [p for p in params if getattr(p, "param_type_name", "") == "option"]
    if arguments:
        lines += ["Arguments:", ""] + [option_line(p, ctx) for p in arguments] + [""]
    if options:
        lines += ["Options:", ""] + [option_line(p, ctx) for p in options] + [""]
    subcommands = getattr(command, "commands", None)
    if subcommands:
        names = [n for n in command.list_commands(ctx) if not subcommands[n].hidden]
        lines += ["Commands: " + ", ".join(f"`{path} {n}`" for n in names) + ".", ""]
    return "\n".join(lines)


def reference() -> str:
    """The whole reference: every command's section, the root first."""
    return "\n".join(command_section(command, ctx) for command, ctx in walk(root_command()))


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """MkDocs event: fill the marker of cli.md; every other page passes through."""
    if page.file.src_uri != PAGE:
        return markdown
    if MARKER not in markdown:
        raise ValueError(f"docs/{PAGE} lost its marker {MARKER}: nowhere to put the reference")
    return markdown.replace(MARKER, reference())
