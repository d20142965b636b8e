"""Plugin of pullback-fx. It registers nothing: fx records calls of existing functions, methods
and modules, and runs them again from generated Python; it adds no op, kernel or rule."""

pullback_hook_api = "1.0"
