"""Plugin of pullback-sutra: it registers no ops (every solver step is a composition of core ops,
and the adjoint is an autograd Function); loading it only records the package."""

pullback_hook_api = "1.0"
