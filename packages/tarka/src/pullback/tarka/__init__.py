"""pullback.tarka: differentiable fuzzy logic, quantifiers, axioms, semantic loss.

Not implemented yet: this distribution is an empty placeholder that installs, is
discovered as a plugin and registers nothing.
"""
