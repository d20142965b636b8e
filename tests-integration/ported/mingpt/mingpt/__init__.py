"""A reproduction of karpathy/minGPT's ``mingpt`` package (model, trainer, utils) for the
ported corpus."""
