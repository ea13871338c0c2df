"""The README stays current (issue 30, point 5): its claim list and count come from the registry,
it names the three papers, and every link it holds to the repository resolves."""

from __future__ import annotations

import re

from tests.readme_claims import README, claims_block, readme_block

ROOT = README.parent


def test_the_claims_block_is_the_registrys():
    assert readme_block(README.read_text()) == claims_block(), (
        "README.md's claims are stale: run python -m tests.readme_claims --write"
    )


def test_no_other_claim_count_is_written_by_hand():
    text = README.read_text().replace(claims_block(), "")
    assert not re.search(r"\b\d+ claims\b", text), "a claim count outside the generated block"


def test_it_names_the_three_papers():
    text = README.read_text()
    for words in ("One-layer transformers fail", "logarithmic depth", "Hsu & Xu"):
        assert words in text


def test_its_links_into_the_repository_resolve():
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README.read_text()):
        if not target.startswith(("http://", "https://")):
            assert (ROOT / target).exists(), target
