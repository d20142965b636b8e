"""pytest configuration of pullback.avyaya's tests."""

from __future__ import annotations

import os
import sys

# The suite runs with --import-mode=importlib, which puts no test folder on sys.path; the shared
# helpers (avyaya_helpers.py, a name no other package uses) are imported from here.
sys.path.insert(0, os.path.dirname(__file__))
