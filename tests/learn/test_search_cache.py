"""Minimal-model searches cached in the results store (headcount.learn.search_cache): stored once,
read back identical, keyed by every argument and the search version, a damaged row refused, and a
model asked for re-run rather than served without its file."""

from __future__ import annotations

import json
import sqlite3
from fractions import Fraction

import pytest

from headcount.learn import search_cache
from headcount.learn.search_cache import boolean_minimal, minmax_minimal
from headcount.learn.store import ResultsStore
from headcount.learn.store_schema import ResultsDBError


def test_a_search_is_stored_once_and_read_back_identical(tmp_path, monkeypatch):
    db = tmp_path / "r.sqlite"
    first, cached = boolean_minimal("xor", 12, 4, 3, db=db)
    assert not cached and first["verdict"] == "d = 1 refuted in the family"

    def boom(*args, **kwargs):
        raise AssertionError("the stored answer should have been read back")

    monkeypatch.setattr(search_cache, "minimal_dimension_one", boom)
    again, cached = boolean_minimal("xor", 12, 4, 3, db=db)
    assert cached and again.pop("cached")["run_id"]
    assert json.dumps(again, sort_keys=True) == json.dumps(first, sort_keys=True)
    with ResultsStore(db) as store:
        (row,) = store.rows(experiment="boolean-minimal")
    assert row["config"]["version"] == search_cache.SEARCH_VERSION and row["config"]["D"] == 4
    with pytest.raises(AssertionError, match="read back"):  # another grid is another search
        boolean_minimal("xor", 12, 4, 3, grid=(Fraction(1), Fraction(2), Fraction(3)), db=db)


def test_minmax_searches_are_cached_by_their_arguments(tmp_path):
    db = tmp_path / "r.sqlite"
    first, cached = minmax_minimal(3, 3, 1, 1, db=db)
    second, cached_again = minmax_minimal(3, 3, 1, 1, db=db)
    other, cached_other = minmax_minimal(3, 4, 1, 1, db=db)
    assert (cached, cached_again, cached_other) == (False, True, False)
    assert second["cells"] == first["cells"] and other["n"] == 4


def test_a_damaged_stored_answer_is_refused(tmp_path):
    db = tmp_path / "r.sqlite"
    minmax_minimal(3, 3, 1, 1, db=db)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE runs SET metrics = '[1, 2]'")
    with pytest.raises(ResultsDBError, match="damaged"):
        minmax_minimal(3, 3, 1, 1, db=db)


def test_a_model_asked_for_is_searched_again(tmp_path):
    db, out = tmp_path / "r.sqlite", tmp_path / "m.safetensors"
    boolean_minimal("xor", 6, 2, 3, db=db)
    record, cached = boolean_minimal("xor", 6, 2, 3, out=out, db=db)
    assert not cached and record["verdict"] == "d = 1 found" and out.exists()
    assert boolean_minimal("xor", 6, 2, 3, db=db)[1]


def test_without_a_database_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    record, cached = minmax_minimal(3, 3, 1, 1)
    assert not cached and "cached" not in record and list(tmp_path.iterdir()) == []
