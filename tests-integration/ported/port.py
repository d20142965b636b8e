"""Port a PyTorch script to pullback by changing only its imports, and run it.

``python port.py SCRIPT [ARGS...]`` runs SCRIPT (with the other ``.py`` files of its folder,
when it is a program of several files in a folder of its own) with ``import torch`` as ``import pullback as
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
    script, rest = Path(argv[0]).resolve(), argv[1:]
    sys.argv = [str(script), *rest]
    # The corpus's shared helpers (corpus_data.py: data sets, no torch) sit beside the programs.
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    if use_torch:
        sys.path.insert(0, str(script.parent))
        runpy.run_path(str(script), run_name="__main__")
        return
    # A program of several files (a folder: main.py, model.py, a package) is ported whole.
    program = script.parent if script.parent != Path(__file__).resolve().parent else None
    sources = sorted(program.rglob("*.py")) if program is not None else [script]
    with tempfile.TemporaryDirectory() as folder:
        for source in sources:
            target = Path(folder) / source.relative_to(script.parent)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(port(source.read_text()))
        sys.path.insert(0, folder)
        runpy.run_path(str(Path(folder) / script.name), run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
