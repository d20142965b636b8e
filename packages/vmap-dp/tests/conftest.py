"""pytest configuration of pullback.func's tests."""

from __future__ import annotations

import os
import sys

import pullback.func  # noqa: F401 - registers the rules even with plugin autoloading disabled

# The suite runs with --import-mode=importlib, which puts no test folder on sys.path; the shared
# helpers (func_helpers.py, a name no other package uses) are imported from here.
sys.path.insert(0, os.path.dirname(__file__))
