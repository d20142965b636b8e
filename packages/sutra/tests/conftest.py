"""pytest runs in importlib mode (see the workspace pyproject.toml), which does not put a test
folder on sys.path; the sutra tests share a helper module, so put this folder there."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
