"""One optimizer step on the GPT's parameter set: pullback.optim against torch.optim (foreach).

The parameters of the char-level GPT (vocab 65, width 128, 4 layers, block 64, LM head tied to
the token embedding): 52 float32 tensors, 809,856 numbers, each with a random gradient. AdamW
and SGD with momentum, pullback time / PyTorch time (target: at most 1.5). Both step the same
shapes in the same process, alternately, best of several rounds; PyTorch uses 2 threads.

Run: python benchmarks/optim_step.py
"""

from __future__ import annotations

import numpy as np

import pullback as pb
import pullback.optim
from _common import best_time, emit, torch_or_exit

VOCAB, WIDTH, LAYERS, BLOCK = 65, 128, 4, 64
TARGET = 1.5


def gpt_shapes() -> list[tuple[int, ...]]:
    """Token and position embeddings; per layer two LayerNorms, qkv and proj Linears, the MLP's
    two Linears; the final LayerNorm (the LM head is the token embedding)."""
    shapes: list[tuple[int, ...]] = [(VOCAB, WIDTH), (BLOCK, WIDTH)]
    for _ in range(LAYERS):
        shapes += [(WIDTH,), (WIDTH,),                      # ln_1 weight, bias
                   (3 * WIDTH, WIDTH), (3 * WIDTH,),        # qkv
                   (WIDTH, WIDTH), (WIDTH,),                # proj
                   (WIDTH,), (WIDTH,),                      # ln_2
                   (4 * WIDTH, WIDTH), (4 * WIDTH,),        # mlp up
                   (WIDTH, 4 * WIDTH), (WIDTH,)]            # mlp down
    return shapes + [(WIDTH,), (WIDTH,)]                    # ln_f


def main() -> None:
    torch = torch_or_exit()
    rng = np.random.default_rng(0)
    weights = [rng.standard_normal(s).astype(np.float32) * 0.02 for s in gpt_shapes()]
    grads = [rng.standard_normal(s).astype(np.float32) * 0.01 for s in gpt_shapes()]

    ours = [pb.tensor(w, requires_grad=True) for w in weights]
    theirs = [torch.tensor(w, requires_grad=True) for w in weights]
    for p, t, g in zip(ours, theirs, grads):
        p.grad = pb.tensor(g)
        t.grad = torch.tensor(g)

    cases = {
        "adamw": (lambda: pullback.optim.AdamW(ours, lr=3e-4, weight_decay=0.1),
                  lambda: torch.optim.AdamW(theirs, lr=3e-4, weight_decay=0.1, foreach=True)),
        "sgd_momentum": (lambda: pullback.optim.SGD(ours, lr=0.01, momentum=0.9),
                         lambda: torch.optim.SGD(theirs, lr=0.01, momentum=0.9, foreach=True)),
    }
    n = sum(w.size for w in weights)
    for name, (make_ours, make_theirs) in cases.items():
        opt_ours, opt_theirs = make_ours(), make_theirs()
        t_ours = t_theirs = float("inf")
        for _ in range(5):  # alternate, so that both see the same machine load
            t_ours = min(t_ours, best_time(opt_ours.step, repeat=40))
            t_theirs = min(t_theirs, best_time(opt_theirs.step, repeat=40))
        emit(benchmark=f"optim_step_{name}", tensors=len(weights), numbers=n, dtype="float32",
             pullback_ms=t_ours * 1e3, torch_ms=t_theirs * 1e3, ratio=t_ours / t_theirs,
             target=TARGET, torch_threads=torch.get_num_threads())


if __name__ == "__main__":
    main()
