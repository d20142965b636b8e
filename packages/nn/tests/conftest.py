"""pytest configuration of pullback.nn's tests."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import pullback.nn  # noqa: F401 - registers the nn ops even with plugin autoloading disabled

# The suite runs with --import-mode=importlib, which puts no test folder on sys.path; the shared
# helpers (nn_helpers.py, a name no other package uses) are imported from here.
sys.path.insert(0, os.path.dirname(__file__))


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)
