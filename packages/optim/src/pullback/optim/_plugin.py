"""pullback-optim's plugin module.

Optimizers, schedulers and clipping are plain Python over Tensors' arrays, not ops: they add
nothing to the op table, no kernels, rules or backends. So this plugin implements no hook; it
exists so that ``python -m pullback plugins`` lists pullback-optim with its version, and so that
a core with an incompatible hook API refuses it with a clear message like any other package.
"""

pullback_hook_api = "1.0"
