"""Plugin of pullback-pramana. It registers no ops: every moment rule is a composition of core
and nn ops (so autograd, devices and the other transforms apply to both streams unchanged)."""

pullback_hook_api = "1.0"
