"""A Hogwild!-style program (PyTorch's mnist_hogwild, reduced to what it shows): worker
processes train the parent's model, passed as a Process argument. Run by
test_share_memory.py under torch and under pullback (``python hogwild_program.py FRAMEWORK``);
it prints, per start method and with or without ``share_memory()``, what the parent's model
holds afterwards. Not a test module: spawned processes import it."""

import importlib
import json
import sys

torch = importlib.import_module(sys.argv[1])
nn = importlib.import_module(sys.argv[1] + ".nn")
mp = importlib.import_module(sys.argv[1] + ".multiprocessing")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1, bias=False)
        self.register_buffer("steps", torch.zeros(2))  # per worker
        self.scale = 0.5  # a plain attribute travels too

    def forward(self, x):
        return self.fc(x) * self.scale


def train(rank, model):
    """Three SGD steps on a loss whose gradient touches only the weight of input ``rank``.
    Each worker writes only its own numbers (its weight, its step counter), through views of
    the shared tensors: an update of a whole tensor (``p.add_(p.grad)``) rewrites the other
    worker's numbers too, and under load one worker's write can undo the other's (Hogwild!'s
    lost updates, under torch as under pullback), which would make the result a race."""
    x = torch.zeros(1, 4)
    x[0, rank] = 1.0
    for _ in range(3):
        model(x).sum().backward()
        with torch.no_grad():
            for p in model.parameters():
                p[:, rank].add_(p.grad[:, rank], alpha=-0.1)
                p.grad = None
            model.steps[rank:rank + 1].add_(1)


def run(method, share):
    ctx = mp.get_context(method)
    model = Net()
    with torch.no_grad():
        model.fc.weight.zero_()
    if share:
        model.share_memory()
    workers = [ctx.Process(target=train, args=(rank, model)) for rank in range(2)]
    for p in workers:
        p.start()
    for p in workers:
        p.join()
    return {"weight": [round(v, 6) for v in model.fc.weight.detach().reshape(-1).tolist()],
            "steps": model.steps.tolist(), "shared": model.fc.weight.is_shared(),
            "codes": [p.exitcode for p in workers]}


if __name__ == "__main__":
    print(json.dumps({f"{method}-{'shared' if share else 'plain'}": run(method, share)
                      for method in ("fork", "spawn") for share in (True, False)}))
