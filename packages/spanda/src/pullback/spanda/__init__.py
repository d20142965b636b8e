"""pullback.spanda: spiking neurons (lif), surrogate gradients, bptt.

Not implemented yet: this distribution is an empty placeholder that installs, is
discovered as a plugin and registers nothing.
"""
