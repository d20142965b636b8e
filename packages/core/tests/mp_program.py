"""A program that sends tensors to other processes, run by test_multiprocessing.py under
torch and under pullback (``python mp_program.py FRAMEWORK``); it prints what the parent sees
in each scenario as one JSON line. Not a test module itself: spawned processes import it."""

import importlib
import json
import sys

torch = importlib.import_module(sys.argv[1])
mp = importlib.import_module(sys.argv[1] + ".multiprocessing")


def add_rank(rank, t):
    t[rank].add_(rank + 1)  # each process its own element: no read-modify-write race between them


def echo(inbox, outbox, done):
    t = inbox.get()
    t.add_(5)  # the parent's tensor: it sees this
    outbox.put(torch.arange(3.0) * 2)  # a new tensor, sent back
    done.wait()  # a sender lives until its tensors are received (as in PyTorch)


def fail(rank):
    raise ValueError(f"boom in process {rank}")


def nothing(t):
    pass


def main(scenario, method):
    if scenario.startswith("args"):
        t = torch.zeros(2)
        if scenario == "args-shared":
            t.share_memory_()
        ctx = mp.get_context(method)
        processes = [ctx.Process(target=add_rank, args=(r, t)) for r in range(2)]
        for p in processes:
            p.start()
        for p in processes:
            p.join()
        return {"t": t.tolist(), "shared": t.is_shared(), "codes": [p.exitcode for p in processes]}
    if scenario == "queue":
        ctx = mp.get_context(method)
        inbox, outbox, done = ctx.Queue(), ctx.Queue(), ctx.Event()
        t = torch.ones(3)
        process = ctx.Process(target=echo, args=(inbox, outbox, done))
        process.start()
        inbox.put(t)
        back = outbox.get(timeout=60)
        done.set()
        process.join()
        return {"t": t.tolist(), "back": back.tolist(), "back_shared": back.is_shared(),
                "code": process.exitcode}
    if scenario == "spawn":
        t = torch.zeros(3).share_memory_()
        mp.spawn(add_rank, args=(t,), nprocs=2, start_method=method)
        try:
            mp.spawn(fail, nprocs=1, start_method=method)
            raised = None
        except Exception as exc:
            raised = {"type": type(exc).__name__, "index": exc.error_index,
                      "has_trace": "ValueError: boom in process 0" in str(exc)}
        return {"t": t.tolist(), "raised": raised}
    if scenario == "nonleaf":
        leaf = torch.ones(2, requires_grad=True)
        try:
            mp.get_context(method).Process(target=nothing, args=(leaf * 2,)).start()
            return {"raised": None}
        except Exception as exc:
            return {"runtime_error": isinstance(exc, RuntimeError), "message": str(exc)[:60]}
    raise SystemExit(f"unknown scenario {scenario}")


SCENARIOS = [
    ("args-shared", "fork"),   # shared before the fork: the children's additions are seen
    ("args-plain", "fork"),    # not shared: copy-on-write, the parent sees nothing
    ("args-plain", "spawn"),   # spawn moves an argument into shared memory (as PyTorch)
    ("queue", "spawn"),        # both ways through Queues, the received tensor shared
    ("queue", "fork"),
    ("spawn", "spawn"),        # mp.spawn, and a failing process's traceback in the parent
    ("nonleaf", "spawn"),      # a tensor with a graph is refused in PyTorch's words
]

if __name__ == "__main__":
    print(json.dumps({f"{scenario}-{method}": main(scenario, method)
                      for scenario, method in SCENARIOS}))
