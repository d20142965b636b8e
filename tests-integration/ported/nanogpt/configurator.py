"""nanoGPT's configurator.py, reproduced: exec'd by train.py and sample.py, it applies
``--key=value`` overrides from the command line to their globals (with literal_eval and the
same type check)."""

import sys
from ast import literal_eval

for arg in sys.argv[1:]:
    assert arg.startswith('--') and '=' in arg, f"expected --key=value, got {arg}"
    key, val = arg.split('=')
    key = key[2:]
    if key in globals():
        try:
            attempt = literal_eval(val)
        except (SyntaxError, ValueError):
            attempt = val
        assert type(attempt) == type(globals()[key])  # noqa: E721 - the original's check
        print(f"Overriding: {key} = {attempt}")
        globals()[key] = attempt
    else:
        raise ValueError(f"Unknown config key: {key}")
