"""pullback.compiler: graph capture, optimization passes, c99 and onnx export.

Not implemented yet: this distribution is an empty placeholder that installs, is
discovered as a plugin and registers nothing.
"""
