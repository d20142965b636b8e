"""Plugin of pullback-vmap-dp: registers nothing yet (the package is still empty)."""

pullback_hook_api = "1.0"
