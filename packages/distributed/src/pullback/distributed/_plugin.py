"""Plugin of pullback-distributed. It registers no ops: collectives work on the backend arrays
of tensors outside the graph, as torch.distributed's do."""

pullback_hook_api = "1.0"
