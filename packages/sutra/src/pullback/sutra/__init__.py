"""pullback.sutra: neural odes: adaptive solvers, adjoint backprop.

Not implemented yet: this distribution is an empty placeholder that installs, is
discovered as a plugin and registers nothing.
"""
