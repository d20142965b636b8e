"""pullback.avyaya: reversible (invertible) blocks with o(1) activation memory.

Not implemented yet: this distribution is an empty placeholder that installs, is
discovered as a plugin and registers nothing.
"""
