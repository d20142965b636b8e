"""pullback-pramana's tests: float64 throughout (Monte Carlo comparisons need it)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # pramana_mc.py
