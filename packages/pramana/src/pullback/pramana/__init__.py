"""pullback.pramana: distributional tensors: analytic mean/variance propagation.

Not implemented yet: this distribution is an empty placeholder that installs, is
discovered as a plugin and registers nothing.
"""
