"""pullback.cuda: cupy backend plugin and hand-written cuda kernels.

Not implemented yet: this distribution is an empty placeholder that installs, is
discovered as a plugin and registers nothing.
"""
