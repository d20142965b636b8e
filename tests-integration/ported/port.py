"""Port a PyTorch script to pullback by changing only its imports, and run it.

``python port.py SCRIPT [ARGS...]`` runs SCRIPT with ``import torch`` as ``import pullback as
torch``, ``import torch.nn as nn`` as ``import pullback.nn as nn``, ``from torch.utils.data
import X`` as ``from pullback.utils.data import X``, and so on; ``--torch`` runs it unchanged.
No other line is touched: what the script needs beyond its imports, pullback must provide.
"""

from __future__ import annotations

import re
import runpy
import sys
import tempfile
from pathlib import Path

_IMPORT = re.compile(r"^(?P<indent>\s*)import torch(?P<sub>(\.\w+)*)(?P<alias> as \w+)?\s*$")
_FROM = re.compile(r"^(?P<indent>\s*)from torch(?P<sub>(\.\w+)*) import ")


def port(source: str) -> str:
    """``source`` with its torch imports turned into pullback imports (and nothing else)."""
    lines = []
    for line in source.splitlines(keepends=True):
        body = line.rstrip("\n")
        found = _IMPORT.match(body)
        if found:
            alias = found["alias"] or (" as torch" if not found["sub"] else None)
            if alias is None:  # "import torch.nn": the script then says torch.nn.X
                body = f"{found['indent']}import pullback as torch; import pullback{found['sub']}"
            else:
                body = f"{found['indent']}import pullback{found['sub']}{alias}"
            line = body + "\n"
        elif _FROM.match(body):
            line = _FROM.sub(lambda m: f"{m['indent']}from pullback{m['sub']} import ", line)
        lines.append(line)
    return "".join(lines)


def main(argv: list[str]) -> None:
    use_torch = "--torch" in argv[:1]
    if use_torch:
        argv = argv[1:]
    script, rest = Path(argv[0]), argv[1:]
    sys.argv = [str(script), *rest]
    if use_torch:
        runpy.run_path(str(script), run_name="__main__")
        return
    with tempfile.TemporaryDirectory() as folder:
        ported = Path(folder) / script.name
        ported.write_text(port(script.read_text()))
        sys.path.insert(0, str(script.parent))
        runpy.run_path(str(ported), run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
