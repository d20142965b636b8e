"""Fuzz pullback's loaders with files someone else prepared (docs/security.md).

Three loaders, each fed mutations of a valid input drawn from a seeded generator:

* ``checkpoint``: ``pullback.load`` of a safetensors checkpoint (nested structure, several
  dtypes, a tuple, int keys, a tied tensor) and of a plain safetensors file: bytes flipped,
  set, cut or added, the length field changed, the JSON header and the pullback structure
  mutated as JSON, the file replaced by a link to ``/dev/zero``, a FIFO or a folder;
* ``optimizer``: the state dicts of AdamW (two groups, amsgrad), SGD (momentum) and LBFGS,
  mutated as objects (a value replaced by another kind, a key dropped or added, a tensor made a
  list, complex, of another shape) and as file bytes, then ``load_state_dict`` and, where it
  accepts, two ``step()`` calls;
* ``run``: a finished ``pullback-gpt`` run folder: ``state.json`` mutated as JSON and as bytes,
  the safetensors files as bytes, ``LATEST`` and ``metrics.csv`` rewritten, any of its files
  replaced by a link (to a file outside, to ``/dev/zero``), a FIFO, a folder or nothing; then
  what ``pullback-gpt train --resume`` and ``sample`` do: load and check the checkpoint, restore
  model, optimizer, scheduler and random states, train one step, save a checkpoint (which
  prunes), sample three tokens.

Each mutation runs in a child process forked from this one (after the imports) with a time
limit (SIGALRM) and a 4 GiB address-space limit. Its outcome is ``accepted`` (it loaded, and what
follows worked), ``refused`` (one typed error: a :class:`~pullback.errors.PullbackError` or an
OSError, what the command-line tools print as one line), ``untyped`` (any other exception,
MemoryError included), ``crash`` (killed by a signal), ``hang`` (the time limit) or, for run
folders, ``wrote_outside`` (a file outside the run folder changed). Only the first two are
allowed: the script prints one JSON line of counts per loader, the failures' details on
stderr, and exits 1 when any was found.

    python tools/fuzz_loaders.py                       # 2,000 mutations per loader
    python tools/fuzz_loaders.py --count 200 --seed 7 --loaders checkpoint
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import os
import resource
import shutil
import signal
import struct
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any, Callable

import numpy as np

import pullback as pb
from pullback.errors import PullbackError

TIME_LIMIT_S = 30
MEMORY_LIMIT = 4 * 2**30
OUTCOMES = ("accepted", "refused", "untyped", "crash", "hang", "wrote_outside")
ALLOWED = ("accepted", "refused")


# -- drawing mutations -----------------------------------------------------------------------

_INTERESTING_NUMBERS = [0, 1, -1, 2, 7, 255, 2**31 - 1, 2**31, 2**32, 2**40, 2**53, 2**63 - 1,
                        2**63, 2**64, -(2**63), 10**30, 0.5, -0.0, 1e308, -1e308, 1e-310,
                        float("inf"), float("-inf"), float("nan")]


def random_json(rng: np.random.Generator, depth: int = 0) -> Any:
    """A JSON value of a random kind (and sometimes a deeply nested one)."""
    kind = rng.integers(12)
    if kind == 0:
        return None
    if kind == 1:
        return bool(rng.integers(2))
    if kind in (2, 3):
        return _INTERESTING_NUMBERS[rng.integers(len(_INTERESTING_NUMBERS))]
    if kind == 4:
        return int(rng.integers(-1000, 1000))
    if kind == 5:
        return ["", "abc", "step-0000001", "../x", "/etc/passwd", "\x00", "F32", "cuda:7",
                "__tensor__", "é" * 3][rng.integers(10)]
    if kind == 6 and depth < 3:
        return [random_json(rng, depth + 1) for _ in range(rng.integers(4))]
    if kind == 7 and depth < 3:
        return {str(random_json(rng, 3)): random_json(rng, depth + 1)
                for _ in range(rng.integers(4))}
    if kind == 8:
        return Deep(int(rng.choice([10, 900, 5000, 100_000])))
    if kind == 9:
        return {"__tensor__": str(random_json(rng, 3)), "dtype": "float32",
                "device": ["cpu", "cuda:0", "tpu", 5][rng.integers(4)]}
    if kind == 10:
        return {["__tuple__", "__dict__"][rng.integers(2)]: random_json(rng, depth + 1)}
    return float(rng.standard_normal())


class Deep:
    """A list nested ``depth`` deep, written out only as text (:func:`to_json`): built as
    objects it would overflow the recursion of whatever walks it, this script included."""

    def __init__(self, depth: int) -> None:
        self.depth = depth

    def nested(self, limit: int = 500) -> Any:
        value: Any = 1
        for _ in range(min(self.depth, limit)):
            value = [value]
        return value


def to_json(value: Any) -> str:
    """``value`` as JSON text, each :class:`Deep` written out at its full depth."""
    deep: list[Deep] = []

    def placeholder(obj: Any) -> Any:
        if isinstance(obj, Deep):
            deep.append(obj)
            return f"@@deep{len(deep) - 1}@@"
        raise TypeError(type(obj).__name__)

    text = json.dumps(value, default=placeholder)
    for i, d in enumerate(deep):
        text = text.replace(f'"@@deep{i}@@"', "[" * d.depth + "1" + "]" * d.depth)
    return text


def materialize(value: Any) -> Any:
    """``value`` with each :class:`Deep` built as objects (500 deep at most)."""
    if isinstance(value, Deep):
        return value.nested()
    if isinstance(value, dict):
        return {k: materialize(v) for k, v in value.items()}
    if isinstance(value, list):
        return [materialize(v) for v in value]
    if isinstance(value, tuple):
        return tuple(materialize(v) for v in value)
    return value


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path (a tuple of keys and indices) into a nested JSON-like value."""
    found = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            found += _paths(v, prefix + (k,))
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            found += _paths(v, prefix + (i,))
    return found


def mutate_tree(value: Any, rng: np.random.Generator,
                leaf: Callable[[Any, np.random.Generator], Any] | None = None) -> Any:
    """A copy of the nested ``value`` with one to three random changes: a node replaced by
    another kind (``leaf(old, rng)`` first, when given), a key dropped or added, a list cut or
    grown."""
    value = copy.deepcopy(value)
    for _ in range(rng.integers(1, 4)):
        paths = _paths(value)
        path = paths[rng.integers(len(paths))]
        if not path:
            value = random_json(rng)
            continue
        parent = value
        for key in path[:-1]:
            parent = parent[key]
        key = path[-1]
        action = rng.integers(6)
        if isinstance(parent, tuple):
            parent = list(parent)  # a tuple's item is replaced through a list
        if action == 0 and isinstance(parent, dict):
            del parent[key]
        elif action == 1 and isinstance(parent, dict):
            parent[str(random_json(rng, 3))] = random_json(rng)
        elif action == 2 and isinstance(parent, list):
            if rng.integers(2):
                del parent[key]
            else:
                parent.append(copy.deepcopy(parent[key]))
        elif action == 3 and leaf is not None:
            parent[key] = leaf(parent[key], rng)
        else:
            parent[key] = random_json(rng)
    return value


def mutate_bytes(data: bytes, rng: np.random.Generator) -> bytes:
    """``data`` with one to four byte-level changes (flips, sets, cuts, insertions, the length
    field of a safetensors file)."""
    out = bytearray(data)
    for _ in range(rng.integers(1, 5)):
        action = rng.integers(6)
        if not out:
            out += bytes(rng.integers(0, 256, 16, dtype=np.uint8))
        i = int(rng.integers(len(out)))
        if action == 0:
            out[i] ^= 1 << int(rng.integers(8))
        elif action == 1:
            out[i] = int(rng.choice([0, 0xFF, 0x7F, 0x80, ord("["), ord("{"), ord('"')]))
        elif action == 2:
            del out[i:i + int(rng.integers(1, 64))]
        elif action == 3:
            out[i:i] = bytes(rng.integers(0, 256, int(rng.integers(1, 32)), dtype=np.uint8))
        elif action == 4 and len(out) >= 8:
            n = int(rng.choice([0, 1, 2**20, 2**40, 2**63, int.from_bytes(out[:8], "little")
                                + int(rng.integers(-8, 8))]))
            out[:8] = struct.pack("<Q", n % 2**64)
        else:
            del out[i:]
    return bytes(out)


def mutate_safetensors_json(data: bytes, rng: np.random.Generator) -> bytes:
    """``data`` (a safetensors file) with its JSON header, or the pullback structure inside
    it, mutated as JSON."""
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    meta = header.get("__metadata__", {})
    if "pullback.structure" in meta and rng.integers(2):
        structure = mutate_tree(json.loads(meta["pullback.structure"]), rng)
        meta["pullback.structure"] = to_json(structure)
    else:
        header = mutate_tree(header, rng)
    text = to_json(header).encode()
    return struct.pack("<Q", len(text)) + text + data[8 + n:]


def plant_special(path: Path, rng: np.random.Generator, outside: Path) -> str:
    """Replace ``path`` by a special file: a link to /dev/zero or to a file outside, a FIFO, a
    folder, or nothing; returns which."""
    if os.path.lexists(path):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    kind = ["dev-zero", "link-out", "fifo", "folder", "missing"][rng.integers(5)]
    if kind == "dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "link-out":
        path.symlink_to(outside / "victim.txt")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    return kind


# -- running one case in a child -------------------------------------------------------------

def run_isolated(target: Callable[[], None]) -> tuple[str, str]:
    """Run ``target`` in a forked child with the time and memory limits; its outcome and, for
    a failure, what happened."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(read_end)
        outcome, detail = "accepted", ""
        try:
            resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
            signal.alarm(TIME_LIMIT_S)
            target()
        except (PullbackError, OSError) as exc:
            outcome, detail = "refused", f"{type(exc).__name__}: {exc}"[:300]
        except BaseException as exc:  # noqa: BLE001 - what the fuzz is looking for
            outcome = "untyped"
            detail = f"{type(exc).__name__}: {str(exc)[:300]}\n" + "".join(
                traceback.format_exception(exc)[-6:])
        with os.fdopen(write_end, "w") as report:
            report.write(json.dumps([outcome, detail]))
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as report:
        text = report.read()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        return ("hang", f"over {TIME_LIMIT_S} s") if sig == signal.SIGALRM else \
            ("crash", f"killed by {signal.Signals(sig).name}")
    if not text:
        return "crash", f"exit status {os.WEXITSTATUS(status)} without a report"
    outcome, detail = json.loads(text)
    return outcome, detail


# -- the loaders -----------------------------------------------------------------------------

def _checkpoint_bases(folder: Path) -> list[bytes]:
    pb.manual_seed(0)
    w = pb.randn(3, 4, requires_grad=True)
    nested = {"model": {"w": w, "tied": w, "b": pb.zeros(4, dtype=pb.float64)},
              "ids": pb.arange(5), "mask": pb.ones(2, dtype=pb.bool),
              "pair": (pb.ones(1), 3), 7: [1.5, None, "text", {"deep": pb.zeros(0)}],
              "array": np.arange(3, dtype=np.int16)}
    pb.save(nested, folder / "nested.safetensors")
    from safetensors.numpy import save_file

    save_file({"x": np.ones((2, 2), np.float32), "y": np.arange(3, dtype=np.uint8)},
              str(folder / "plain.safetensors"))
    return [(folder / n).read_bytes() for n in ("nested.safetensors", "plain.safetensors")]


def fuzz_checkpoint(rng: np.random.Generator, count: int, work: Path) -> dict[str, Any]:
    bases = _checkpoint_bases(work)
    path = work / "case.safetensors"

    def load() -> None:
        loaded = pb.load(path)
        for t in _tensors(loaded):
            np.asarray(t.numpy() if isinstance(t, pb.Tensor) else t).sum()

    def case(i: int) -> tuple[str, str]:
        base = bases[rng.integers(len(bases))]
        how = rng.integers(10)
        if os.path.lexists(path):
            os.unlink(path) if not path.is_dir() or path.is_symlink() else shutil.rmtree(path)
        if how == 0:
            plant_special(path, rng, work)
        elif how == 1:  # only the tensors' bytes: a valid file of other values
            n = 8 + int.from_bytes(base[:8], "little")
            path.write_bytes(base[:n] + mutate_bytes(base[n:], rng)[:len(base) - n].ljust(
                len(base) - n, b"\0"))
        else:
            data = mutate_safetensors_json(base, rng) if how < 5 else mutate_bytes(base, rng)
            path.write_bytes(data)
        return run_isolated(load)

    return _tally("checkpoint", count, case)


def _tensors(value: Any) -> list[Any]:
    if isinstance(value, (pb.Tensor, np.ndarray)):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v)]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    return []


def _optimizers() -> list[tuple[str, Callable[[], tuple[Any, Callable[[], None]]]]]:
    import pullback.optim as optim

    def params() -> list[pb.Tensor]:
        pb.manual_seed(1)
        return [pb.randn(3, 2, requires_grad=True), pb.randn(2, requires_grad=True),
                pb.randn(4, requires_grad=True)]

    def stepper(opt: Any, ps: list[pb.Tensor], closure: bool = False) -> Callable[[], None]:
        def loss() -> Any:
            opt.zero_grad()
            value = sum(((p - 0.5) ** 2).sum() for p in ps)
            value.backward()
            return value

        def step() -> None:
            if closure:
                opt.step(loss)
            else:
                loss()
                opt.step()
        return step

    def adamw() -> tuple[Any, Callable[[], None]]:
        ps = params()
        opt = optim.AdamW([{"params": ps[:2]}, {"params": ps[2:], "lr": 0.01}], amsgrad=True)
        return opt, stepper(opt, ps)

    def sgd() -> tuple[Any, Callable[[], None]]:
        ps = params()
        opt = optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True)
        return opt, stepper(opt, ps)

    def lbfgs() -> tuple[Any, Callable[[], None]]:
        ps = params()
        opt = optim.LBFGS(ps, max_iter=3, history_size=3)
        return opt, stepper(opt, ps, closure=True)

    return [("adamw", adamw), ("sgd", sgd), ("lbfgs", lbfgs)]


def _tensor_leaf(old: Any, rng: np.random.Generator) -> Any:
    """Another value where a tensor (or anything) was: a list, a complex or integer array, a
    tensor of another shape, NaNs."""
    shape = tuple(old.shape) if isinstance(old, pb.Tensor) else (2,)
    choice = rng.integers(6)
    if choice == 0:
        return np.zeros(shape, np.complex64)
    if choice == 1:
        return pb.zeros(*[s + 1 for s in shape]) if shape else pb.zeros(2)
    if choice == 2:
        return np.full(shape, np.nan, np.float32)
    if choice == 3:
        return np.ones(shape, np.int64)
    if choice == 4:
        return old.tolist() if isinstance(old, pb.Tensor) else [old]
    return np.ones(shape, np.bool_)


def fuzz_optimizer(rng: np.random.Generator, count: int, work: Path) -> dict[str, Any]:
    bases = []
    for name, make in _optimizers():
        opt, step = make()
        step()
        step()
        pb.save(opt.state_dict(), work / f"{name}.safetensors")
        bases.append((name, make, opt.state_dict(), (work / f"{name}.safetensors").read_bytes()))
    path = work / "case.safetensors"

    def case(i: int) -> tuple[str, str]:
        name, make, state, data = bases[rng.integers(len(bases))]
        if rng.integers(3):
            mutated = materialize(mutate_tree(state, rng, _tensor_leaf))

            def target() -> None:
                opt, step = make()
                opt.load_state_dict(mutated)
                step()
                step()
        else:
            path.write_bytes(mutate_bytes(data, rng) if rng.integers(2)
                             else mutate_safetensors_json(data, rng))

            def target() -> None:
                opt, step = make()
                opt.load_state_dict(pb.load(path))
                step()
                step()
        return run_isolated(target)

    return _tally("optimizer", count, case)


def _finished_run(work: Path) -> Path:
    from pullback.gpt import GPTConfig, TrainConfig
    from pullback.gpt.train import train

    text = "".join(f"line {i}: to be or not to be, {i % 7}.\n" for i in range(200))
    (work / "corpus.txt").write_text(text)
    cfg = TrainConfig(model=GPTConfig(block_size=8, n_layer=1, n_head=2, n_embd=8),
                      batch_size=2, steps=2, warmup=1, eval_interval=1, eval_iters=1,
                      checkpoint_interval=1)
    with contextlib.redirect_stdout(sys.stderr):  # its evaluation lines: stdout is the counts
        train(cfg, text, work / "base", quiet=True)
    return work / "base"


def fuzz_run_folder(rng: np.random.Generator, count: int, work: Path) -> dict[str, Any]:
    base = _finished_run(work)
    text = (work / "corpus.txt").read_text()
    step_names = sorted(p.name for p in (base / "checkpoints").iterdir()
                        if p.name.startswith("step-"))
    state = json.loads((base / "checkpoints" / step_names[-1] / "state.json").read_text())

    def case(i: int) -> tuple[str, str]:
        folder = work / "case"
        if folder.exists():
            shutil.rmtree(folder)
        outside = folder / "outside"
        outside.mkdir(parents=True)
        (outside / "victim.txt").write_text("precious")
        run = folder / "run"
        shutil.copytree(base, run, symlinks=True)
        step = run / "checkpoints" / step_names[rng.integers(len(step_names))]
        _mutate_run(rng, run, step, state, outside)
        before = sorted(os.listdir(outside))
        outcome = run_isolated(lambda: _resume_and_sample(run, text))
        if outcome[0] in ALLOWED and ((outside / "victim.txt").read_text() != "precious"
                                      or sorted(os.listdir(outside)) != before):
            return "wrote_outside", f"after {outcome}: {sorted(os.listdir(outside))}"
        return outcome

    return _tally("run", count, case)


def _mutate_run(rng: np.random.Generator, run: Path, step: Path, state: dict[str, Any],
                outside: Path) -> None:
    how = rng.integers(12)
    files = [step / "state.json", step / "model.safetensors", step / "optimizer.safetensors",
             run / "checkpoints" / "LATEST", run / "metrics.csv", run / "loss.png",
             run / "checkpoints"]
    if how < 5:
        (step / "state.json").write_text(to_json(mutate_tree(state, rng)))
    elif how == 5:
        (step / "state.json").write_bytes(mutate_bytes((step / "state.json").read_bytes(), rng))
    elif how == 6:
        target = step / ["model.safetensors", "optimizer.safetensors"][rng.integers(2)]
        data = target.read_bytes()
        target.write_bytes(mutate_bytes(data, rng) if rng.integers(2)
                           else mutate_safetensors_json(data, rng))
    elif how == 7:
        (run / "checkpoints" / "LATEST").write_text(
            ["../../outside", str(outside), "..", "", "step-9", step.name + "/../..", "\0",
             to_json(random_json(rng))][rng.integers(8)])
    elif how == 8:
        (run / "metrics.csv").write_bytes(mutate_bytes((run / "metrics.csv").read_bytes(), rng))
    else:
        plant_special(files[rng.integers(len(files))], rng, outside)


def _resume_and_sample(run: Path, text: str) -> None:
    """What ``pullback-gpt train --resume`` and ``sample`` do with a run folder."""
    import pullback.gpt.train as training
    from pullback.gpt import GPT, load_checkpoint, save_checkpoint
    from pullback.gpt.data import CharDataset

    device = pb.Device("cpu")
    training.check_run_folder(run)
    ckpt = load_checkpoint(run)
    cfg = ckpt.train_config
    if cfg is None:
        raise PullbackError("no train_config: sample only")  # counted as refused for resume
    model = GPT(cfg.model)
    optimizer = training.make_optimizer(model, cfg)
    scheduler = training.make_scheduler(optimizer, cfg)
    rng = np.random.default_rng(cfg.seed)
    training.restore_run(ckpt, model, optimizer, scheduler, device)
    training._restore_data_rng(rng, ckpt.state, None, cfg.seed, ckpt.step)
    log = training._Log(run / "metrics.csv", ckpt.step)
    data = CharDataset(np.asarray(ckpt.tokenizer.encode(text), dtype=np.uint16))
    x, y = data.batch("train", cfg.batch_size, cfg.model.block_size, rng, device)
    _, loss = model(x, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    scheduler.step()
    log.row(step=ckpt.step + 1, loss=f"{loss.item():.6f}")
    log.close()
    save_checkpoint(run, model, ckpt.tokenizer, {**ckpt.state, "step": ckpt.step + 1}, optimizer)
    model.eval()
    model.generate(pb.tensor([[0]]), 3, generator=np.random.default_rng(0))


# -- counting --------------------------------------------------------------------------------

def _tally(loader: str, count: int, case: Callable[[int], tuple[str, str]]) -> dict[str, Any]:
    counts = dict.fromkeys(OUTCOMES, 0)
    failures = []
    for i in range(count):
        outcome, detail = case(i)
        counts[outcome] += 1
        if outcome not in ALLOWED:
            failures.append({"case": i, "outcome": outcome, "detail": detail})
    return {"loader": loader, "mutations": count, **counts, "failures": failures}


LOADERS = {"checkpoint": fuzz_checkpoint, "optimizer": fuzz_optimizer, "run": fuzz_run_folder}


def fuzz(loader: str, count: int, seed: int) -> dict[str, Any]:
    """Run ``count`` mutations of ``loader`` drawn from ``seed``; the counts and failures."""
    rng = np.random.default_rng([seed, list(LOADERS).index(loader)])
    with tempfile.TemporaryDirectory(prefix=f"pullback-fuzz-{loader}-") as work:
        return LOADERS[loader](rng, count, Path(work))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=2000, help="mutations per loader")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--loaders", nargs="+", choices=sorted(LOADERS), default=list(LOADERS))
    args = parser.parse_args(argv)
    failed = False
    for loader in args.loaders:
        result = fuzz(loader, args.count, args.seed)
        failures = result.pop("failures")
        print(json.dumps({**result, "seed": args.seed}), flush=True)
        for failure in failures[:20]:
            print(json.dumps({"loader": loader, **failure}), file=sys.stderr)
        failed = failed or bool(failures)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
