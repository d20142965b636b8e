"""The same GPT written in PyTorch (the test oracle), and a lock-step parity run.

Imported by the parity test and by ``benchmarks/gpt_step.py`` / ``benchmarks/gpt_parity.py``;
it needs torch, which is never a dependency of the package itself.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn as tnn
import torch.nn.functional as TF


class TorchBlock(tnn.Module):
    def __init__(self, n_embd: int, n_head: int, bias: bool) -> None:
        super().__init__()
        self.n_head = n_head
        self.ln_1 = tnn.LayerNorm(n_embd, bias=bias)
        self.c_attn = tnn.Linear(n_embd, 3 * n_embd, bias=bias)
        self.attn_proj = tnn.Linear(n_embd, n_embd, bias=bias)
        self.ln_2 = tnn.LayerNorm(n_embd, bias=bias)
        self.c_fc = tnn.Linear(n_embd, 4 * n_embd, bias=bias)
        self.mlp_proj = tnn.Linear(4 * n_embd, n_embd, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.n_head, c // self.n_head).transpose(1, 2) for z in (q, k, v))
        y = TF.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.attn_proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp_proj(TF.gelu(self.c_fc(self.ln_2(x))))


class TorchGPT(tnn.Module):
    def __init__(self, vocab: int, block: int, n_layer: int, n_head: int, n_embd: int,
                 bias: bool) -> None:
        super().__init__()
        self.wte = tnn.Embedding(vocab, n_embd)
        self.wpe = tnn.Embedding(block, n_embd)
        self.h = tnn.ModuleList([TorchBlock(n_embd, n_head, bias) for _ in range(n_layer)])
        self.ln_f = tnn.LayerNorm(n_embd, bias=bias)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        t = idx.shape[1]
        x = self.wte(idx) + self.wpe(torch.arange(t))
        for block in self.h:
            x = block(x)
        logits = self.ln_f(x) @ self.wte.weight.T  # tied LM head
        return TF.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


# pullback parameter name -> torch parameter name
def name_map(n_layer: int) -> dict[str, str]:
    names = {"transformer.wte.weight": "wte.weight", "transformer.wpe.weight": "wpe.weight",
             "transformer.ln_f.weight": "ln_f.weight", "transformer.ln_f.bias": "ln_f.bias"}
    for i in range(n_layer):
        ours, theirs = f"transformer.h.{i}.", f"h.{i}."
        for a, b in [("ln_1", "ln_1"), ("ln_2", "ln_2"), ("attn.c_attn", "c_attn"),
                     ("attn.c_proj", "attn_proj"), ("mlp.c_fc", "c_fc"),
                     ("mlp.c_proj", "mlp_proj")]:
            for kind in ("weight", "bias"):
                names[ours + f"{a}.{kind}"] = theirs + f"{b}.{kind}"
    return names


def torch_twin(model: Any) -> TorchGPT:
    """A TorchGPT holding exactly the weights of the pullback GPT ``model`` (same dtype)."""
    cfg = model.config
    twin = TorchGPT(cfg.vocab_size, cfg.block_size, cfg.n_layer, cfg.n_head, cfg.n_embd, cfg.bias)
    dtype = {np.dtype(np.float64): torch.float64, np.dtype(np.float32): torch.float32}[
        model.transformer.wte.weight.dtype]
    twin.to(dtype)
    theirs = dict(twin.named_parameters())
    mapping = name_map(cfg.n_layer)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name == "lm_head.weight":
                continue
            theirs[mapping[name]].copy_(torch.from_numpy(np.array(p.detach().numpy())))
    return twin


def lockstep(model: Any, batches: list[tuple[np.ndarray, np.ndarray]], lr: float = 1e-3,
             weight_decay: float = 0.1, betas: tuple[float, float] = (0.9, 0.99)) -> dict:
    """Train ``model`` (pullback) and its torch twin on the same batches with AdamW.

    Returns per-step losses of both, and how far apart the final parameters are.
    """
    import pullback as pb
    import pullback.optim as optim

    twin = torch_twin(model)
    mapping = name_map(model.config.n_layer)
    ours = optim.AdamW(model.parameters(), lr=lr, betas=betas, weight_decay=weight_decay)
    theirs = torch.optim.AdamW(twin.parameters(), lr=lr, betas=betas, weight_decay=weight_decay)
    losses_pb, losses_torch = [], []
    for x, y in batches:
        _, loss = model(pb.tensor(x), pb.tensor(y))
        ours.zero_grad()
        loss.backward()
        ours.step()
        tloss = twin(torch.from_numpy(x), torch.from_numpy(y))
        theirs.zero_grad()
        tloss.backward()
        theirs.step()
        losses_pb.append(loss.item())
        losses_torch.append(tloss.item())
    tparams = dict(twin.named_parameters())
    pairs = [(p.detach().numpy(), tparams[mapping[n]].detach().numpy())
             for n, p in model.named_parameters() if n != "lm_head.weight"]
    # Worst violation of |a - b| <= atol + rtol * |b| as an rtol (with atol 1e-12).
    worst = max(float(np.max((np.abs(a - b) - 1e-12) / (np.abs(b) + 1e-300))) for a, b in pairs)
    return {"loss_pullback": losses_pb, "loss_torch": losses_torch,
            "param_rtol": max(worst, 0.0),
            "max_param_abs_diff": max(float(np.max(np.abs(a - b))) for a, b in pairs)}


def relative(a: float, b: float) -> float:
    return abs(a - b) / max(abs(b), 1e-300)

