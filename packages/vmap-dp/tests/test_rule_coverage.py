"""Every op of core, pullback-nn and pullback.func itself (``func.outer``) has a batching rule
and (when differentiable) a jvp rule: the failure names exactly the ops that lack one, so that
an op added to core or nn without rules is reported here by name. (Other distributions' ops
get theirs from their own plugins; the op table shows where each op stands.)"""

from __future__ import annotations

import pytest

import pullback.plugins
from pullback.registry import OP_OWNERS
from pullback.func._table import missing_rules, render_markdown, rule_table

pytest.importorskip("pullback.nn")  # its fused ops are part of the table


OWNERS = ("pullback", "pullback-nn", "pullback-vmap-dp")


def _missing(key: str) -> list[str]:
    pullback.plugins.load_plugins()
    return [op for op in missing_rules()[key] if OP_OWNERS.get(op) in OWNERS]


def test_every_op_has_a_batch_rule() -> None:
    missing = _missing("batch")
    assert not missing, f"ops without a 'batch' rule (vmap): {', '.join(missing)}"


def test_every_differentiable_op_has_a_jvp_rule() -> None:
    missing = _missing("jvp")
    assert not missing, f"ops without a 'jvp' rule (forward mode): {', '.join(missing)}"


def test_table_lists_every_op() -> None:
    rows = rule_table()
    table = render_markdown()
    assert rows and all(f"`{r['op']}`" in table for r in rows)
    assert any(r["batch"] == "family rule (elementwise)" for r in rows)
    assert any(r["jvp"].startswith("derived from the grad rule") for r in rows)


def test_only_ops_with_value_sized_outputs_use_the_loop_fallback() -> None:
    """unique and nonzero (whose output size depends on the values: torch.func cannot batch
    them either), and two raw-array first-order backward ops the transforms never reach."""
    pullback.plugins.load_plugins()
    looped = {r["op"] for r in rule_table()
              if r["batch"] == "loop fallback" and OP_OWNERS.get(r["op"]) in OWNERS}
    assert looped == {"unique", "nonzero", "nn.layer_norm_backward",
                      "nn.recurrent_layer_backward"}
