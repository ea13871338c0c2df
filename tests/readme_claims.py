"""The README's list of claims, generated from the claim registry (issue 30, point 5):
`python -m tests.readme_claims` prints the block, `python -m tests.readme_claims --write` puts it
into README.md between its markers; tests/test_readme.py fails when the README's block is stale."""

from __future__ import annotations

import re
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
START = (
    "<!-- claims: generated from the claim registry by `python -m tests.readme_claims --write` -->"
)
END = "<!-- /claims -->"


def _sentence(text: str, limit: int = 160) -> str:
    first = re.split(r"(?<=\.)\s", text.strip(), maxsplit=1)[0].rstrip(".:;")
    return first if len(first) <= limit else first[:limit].rsplit(" ", 1)[0].rstrip(",;:(") + " …"


def claims_block() -> str:
    """The README's block: how many claims `headcount reproduce` re-derives, one row each."""
    from headcount.report.claim_ids import CLAIM_IDS
    from headcount.report.claims import REGISTRY
    from headcount.report.reproduce import load_claims

    load_claims()  # the registry holds exactly CLAIM_IDS (a report test says so), listed in order
    rows = [f"`headcount reproduce` re-derives {len(REGISTRY)} claims:", ""]
    rows += ["| claim | paper | what is checked |", "|---|---|---|"]
    for claim in (REGISTRY[i] for i in CLAIM_IDS):
        text = _sentence(claim.statement).replace("|", "\\|")
        rows.append(f"| `{claim.id}` | {claim.paper} | {text} |")
    return "\n".join([START, *rows, END])


def readme_block(text: str) -> str | None:
    """The block README.md holds now (None when its markers are missing)."""
    match = re.search(re.escape(START) + r".*?" + re.escape(END), text, re.S)
    return None if match is None else match.group(0)


def main(argv: list[str]) -> int:
    block = claims_block()
    if "--write" not in argv:
        print(block)
        return 0
    text = README.read_text()
    old = readme_block(text)
    if old is None:
        print("README.md has no claims markers", file=sys.stderr)
        return 1
    README.write_text(text.replace(old, block))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
