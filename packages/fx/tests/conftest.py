"""pytest configuration of pullback.fx's tests."""

from __future__ import annotations

import os
import sys

# The suite runs with --import-mode=importlib, which puts no test folder on sys.path; the shared
# helpers (fx_*.py, names no other package uses) are imported from here.
sys.path.insert(0, os.path.dirname(__file__))
