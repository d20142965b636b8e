"""pullback.gpt: a char-level gpt trained on pullback, with a cli.

Not implemented yet: this distribution is an empty placeholder that installs, is
discovered as a plugin and registers nothing.
"""
