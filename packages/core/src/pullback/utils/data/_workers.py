"""DataLoader worker processes, and ``get_worker_info`` inside them.

Workers are forked (the dataset, collate_fn and worker_init_fn are inherited, never pickled:
pullback pickles nothing). Each worker has a pipe to the main process. Down it go tasks as JSON
(``{"id": k, "indices": [...]}`` for map-style datasets, ``{"id": k}`` for the next batch of an
iterable one, ``{"reset": true}`` to restart an iterable at a new epoch, an empty message to
stop); up it come batches encoded by :func:`pullback.save` (safetensors: tensors, arrays and
plain values, so a batch crosses processes as it would a checkpoint), errors with their
traceback, and the end of an iterable worker's stream. The first byte of a reply says which.
"""

from __future__ import annotations

import io
import json
import random
import traceback
from dataclasses import dataclass
from typing import Any

import numpy as np

BATCH, ERROR, END = b"B", b"E", b"X"


@dataclass(frozen=True)
class WorkerInfo:
    """What a worker process knows about itself (``get_worker_info()`` inside a worker).

    Attributes:
        id: this worker's index, ``0 <= id < num_workers``.
        num_workers: the loader's worker count.
        seed: the seed of this worker's generators (``base_seed + id``, base drawn per epoch
            from the loader's generator).
        dataset: this worker's copy of the dataset.
    """

    id: int
    num_workers: int
    seed: int
    dataset: Any


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """This worker's :class:`WorkerInfo` in a DataLoader worker process, ``None`` elsewhere
    (used to shard an IterableDataset over workers)."""
    return _worker_info


def encode_batch(task_id: int, batch: Any) -> bytes:
    """A batch as the bytes a worker sends: :func:`pullback.save` of ``{"id", "batch"}``."""
    from pullback.serialization import save

    buffer = io.BytesIO()
    save({"id": task_id, "batch": batch}, buffer)
    return BATCH + buffer.getvalue()


def decode_reply(message: bytes) -> tuple[bytes, int, Any]:
    """``(kind, task id, batch or error dict)`` of a worker's reply."""
    kind, body = message[:1], message[1:]
    if kind == BATCH:
        from pullback.serialization import load

        decoded = load(io.BytesIO(body))
        return kind, decoded["id"], decoded["batch"]
    payload = json.loads(body)
    return kind, payload["id"], payload


def worker_main(loader: Any, worker_id: int, num_workers: int, seed: int, conn: Any) -> None:
    """The loop of one worker process (the target of the forked Process)."""
    global _worker_info
    import pullback
    from pullback._cpu_parallel import set_num_threads

    set_num_threads(1)  # workers share the cores; the parent's thread pool is not inherited
    pullback.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed % (1 << 32))
    _worker_info = WorkerInfo(worker_id, num_workers, seed, loader.dataset)
    init_error = None
    try:
        if loader.worker_init_fn is not None:
            loader.worker_init_fn(worker_id)
    except Exception as exc:  # reported with the first task: the main process raises it
        init_error = exc, traceback.format_exc()
    stream = None
    while True:
        try:
            message = conn.recv_bytes()
        except (EOFError, OSError):
            return  # the main process is gone
        if not message:
            return
        task = json.loads(message)
        if task.get("reset"):
            stream = None
            continue
        try:
            if init_error is not None:
                raise init_error[0]
            if "indices" in task:
                batch = loader._fetch(task["indices"])
            else:
                if stream is None:
                    stream = loader._iterable_batches()
                try:
                    batch = next(stream)
                except StopIteration:
                    conn.send_bytes(END + json.dumps({"id": task["id"]}).encode())
                    continue
            reply = encode_batch(task["id"], batch)
        except Exception as exc:
            trace = init_error[1] if init_error is not None else traceback.format_exc()
            reply = ERROR + json.dumps({"id": task["id"], "type": type(exc).__name__,
                                        "trace": trace}).encode()
        conn.send_bytes(reply)
