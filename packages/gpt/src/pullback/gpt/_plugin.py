"""Plugin of pullback-gpt: a model package, it registers no ops, backends or rules."""

pullback_hook_api = "1.0"
