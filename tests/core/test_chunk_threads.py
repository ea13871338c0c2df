"""evaluate._map_chunks: chunks on worker threads, BLAS on one thread meanwhile (its own threads
would compete with the workers for the cores), the caller's BLAS setting back afterwards, results in
order."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from threadpoolctl import ThreadpoolController, threadpool_info

import headcount.core.certify.evaluate as evaluate


def blas_threads() -> list[int]:
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


@pytest.fixture
def two_blas_threads(monkeypatch):
    monkeypatch.setattr(evaluate, "WORKERS", 2)
    if not blas_threads():
        pytest.skip("no BLAS library that threadpoolctl can control is loaded")
    with ThreadpoolController().limit(limits=2, user_api="blas"):
        yield


def test_workers_run_with_one_blas_thread_and_the_setting_comes_back(two_blas_threads):
    seen, names = [], set()

    def fn(part):
        seen.append(blas_threads())
        names.add(threading.current_thread().name)
        return part @ part.T

    parts = [np.full((3, 2), float(i)) for i in range(4)]
    out = evaluate._map_chunks(fn, parts)
    assert [o[0, 0] for o in out] == [2.0 * i * i for i in range(4)]  # in the parts' order
    assert seen and all(threads == [1] * len(threads) for threads in seen)
    assert all(name != threading.current_thread().name for name in names)
    assert blas_threads() == [2] * len(blas_threads())


def test_one_chunk_runs_in_the_caller_with_blas_untouched(two_blas_threads):
    seen = []
    evaluate._map_chunks(lambda part: seen.append(blas_threads()), [np.zeros(1)])
    assert seen == [[2] * len(blas_threads())]


def test_overlapping_callers_restore_the_setting_only_when_the_last_leaves(two_blas_threads):
    with evaluate._single_threaded_blas():
        with evaluate._single_threaded_blas():
            assert set(blas_threads()) == {1}
        assert set(blas_threads()) == {1}
    assert set(blas_threads()) == {2}


def test_a_failing_chunk_still_restores_the_setting(two_blas_threads):
    def fn(part):
        raise ValueError("chunk failed")

    with pytest.raises(ValueError, match="chunk failed"):
        evaluate._map_chunks(fn, [np.zeros(1), np.zeros(1)])
    assert set(blas_threads()) == {2}
