"""pullback.func: vmap/grad/jacrev/jacfwd/hessian; dp-sgd and privacy accounting.

Not implemented yet: this distribution is an empty placeholder that installs, is
discovered as a plugin and registers nothing.
"""
