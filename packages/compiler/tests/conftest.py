"""pytest runs in importlib mode, which does not put a test folder on sys.path; the compiler
tests share a helper module (the battery of models and steps), so put this folder there."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
