"""Plugin of pullback.dp: it adds no op, kernel or rule (DP-SGD is built on pullback.func's
rules and pullback.nn's layers); the entry point makes the package visible to
``python -m pullback plugins``."""

pullback_hook_api = "1.0"
