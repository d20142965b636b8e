"""What every example shares: its command line (``--smoke``, ``--out DIR``, ``--data DIR``) and
the one-line messages for a data set or an optional package that is not there. Not an example
itself.

``--smoke`` is each example's smallest configuration (seconds; what the tests run), ``--out`` its
output folder (default ``runs/<example name>/``, git-ignored), ``--data`` where its data set is.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from contextlib import contextmanager
from types import ModuleType
from typing import Iterator, NoReturn

from pullback.cli import ArgumentParser


def example_parser(doc: str, script: str, data_help: str | None = None) -> argparse.ArgumentParser:
    """A parser with ``--smoke`` and ``--out`` (and ``--data`` when ``data_help`` says what it
    holds) for the example ``script`` (its ``__file__``), described by the first line of ``doc``."""
    name = os.path.splitext(os.path.basename(script))[0]
    parser = ArgumentParser(description=doc.strip().splitlines()[0])
    parser.add_argument("--smoke", action="store_true",
                        help="the smallest configuration, a few seconds (what the tests run)")
    parser.add_argument("--out", default=os.path.join("runs", name), metavar="DIR",
                        help=f"output folder (default: runs/{name})")
    if data_help is not None:
        parser.add_argument("--data", default=None, metavar="DIR", help=data_help)
    return parser


def output_dir(out: str) -> str:
    """``out``, created."""
    os.makedirs(out, exist_ok=True)
    return out


def missing_data(message: str) -> NoReturn:
    """Stop with one line on stderr saying what is missing and how to get it (exit status 2)."""
    print(f"{os.path.basename(sys.argv[0])}: {message}", file=sys.stderr)
    raise SystemExit(2)


@contextmanager
def data_set() -> Iterator[None]:
    """Turn a missing data set (a FileNotFoundError, whose message says where to get it) into
    :func:`missing_data`."""
    try:
        yield
    except FileNotFoundError as exc:
        missing_data(f"{exc} (or point --data at it)")


def require(module: str, distribution: str, why: str) -> ModuleType:
    """Import ``module``, an optional package the example needs (``pip install -r
    requirements.txt`` brings it); without it, stop with one line naming what to install."""
    try:
        return importlib.import_module(module)
    except ImportError:
        missing_data(f"{why} needs {distribution}, which is not installed: pip install "
                     f"{distribution} (or pip install -r requirements.txt, which brings what "
                     "every example needs)")
