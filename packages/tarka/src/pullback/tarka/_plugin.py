"""Plugin of pullback-tarka. It registers no ops: connectives, quantifiers and the semantic loss
are compositions of core ops, so autograd and every transform apply unchanged."""

pullback_hook_api = "1.0"
