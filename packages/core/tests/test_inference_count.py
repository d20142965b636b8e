"""Dispatch checks a plain count of threads inside inference_mode before the thread-local flag
(a cheaper test on every op): the count follows the contexts, and one thread's inference_mode
marks only its own tensors."""

from __future__ import annotations

import threading

import pullback as pb
from pullback.dispatch import inference_threads
from pullback.tensor import INFERENCE_VERSION


def test_the_count_follows_nested_contexts() -> None:
    start = inference_threads[0]
    with pb.inference_mode():
        assert inference_threads[0] == start + 1
        with pb.inference_mode():
            assert inference_threads[0] == start + 1  # the thread is counted once
        with pb.inference_mode(False):
            assert inference_threads[0] == start
        with pb.no_grad():
            assert inference_threads[0] == start + 1
    assert inference_threads[0] == start


def test_another_threads_inference_mode_does_not_mark_this_threads_tensors() -> None:
    inside, leave = threading.Event(), threading.Event()

    def worker() -> None:
        with pb.inference_mode():
            inside.set()
            leave.wait(10)

    t = threading.Thread(target=worker)
    t.start()
    try:
        inside.wait(10)
        assert inference_threads[0] >= 1
        with pb.no_grad():
            y = pb.ones(3) * 2.0
        assert y._version is not INFERENCE_VERSION
        with pb.inference_mode():
            z = pb.ones(3) * 2.0
        assert z._version is INFERENCE_VERSION
    finally:
        leave.set()
        t.join()
