"""Plugin of pullback-avyaya. It registers nothing: the couplings are compositions of existing
ops, and the stack's custom gradient is a ``pullback.autograd.Function``."""

pullback_hook_api = "1.0"
