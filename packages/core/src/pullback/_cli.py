"""The ``pullback`` command line (also ``python -m pullback``).

``pullback plugins`` lists the installed pullback distributions: version, load status, and what
each registered (backends with their availability and the library of their matrix products,
ops, kernels, rules, graph passes, exporters), then the plugins that failed to load and why.
``--json`` prints the same report as JSON for scripts and CI.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from importlib import metadata
from typing import Any

from . import __version__, hookspecs, plugins
from .backends import backends
from .cli import ArgumentParser, add_debug_option, run_command

# The order in which a plugin's registrations are listed.
_KINDS = ("backends", "ops", "kernels", "rules", "graph_passes", "exporters")
# A table cell lists at most this many names (``--verbose`` lists them all).
_SHOWN_NAMES = 6


def plugins_report() -> dict[str, Any]:
    """What :command:`pullback plugins --json` prints: every plugin, loaded, failed or disabled."""
    plugins.load_plugins()
    rows = [_loaded_row(rec) for rec in plugins.records().values()]
    rows += [_row(rec, "failed") for rec in plugins.failed().values()]
    seen = {(row["name"], row["distribution"]) for row in rows}
    for ep in metadata.entry_points(group=hookspecs.PROJECT):
        dist = ep.dist.name if ep.dist is not None else ep.name
        if (ep.name, dist) in seen:
            continue
        # An entry point neither loaded nor failed was skipped by the environment variables.
        status = "disabled" if not plugins._wanted(ep.name, dist) else "not loaded"
        version = ep.dist.version if ep.dist is not None else ""
        rows.append({"name": ep.name, "distribution": dist, "version": version,
                     "module": ep.value, "status": status, "error": None, "registered": {}})
    # Core first, then by distribution and plugin name.
    rows.sort(key=lambda r: (r["distribution"] != "pullback", r["distribution"], r["name"]))
    return {
        "pullback": __version__,
        "hook_api": ".".join(map(str, hookspecs.HOOK_API_VERSION)),
        "environment": {var: os.environ.get(var)
                        for var in ("PULLBACK_DISABLE_PLUGINS", "PULLBACK_PLUGINS")},
        "plugins": rows,
    }


def _row(record: plugins.PluginRecord, status: str) -> dict[str, Any]:
    return {"name": record.name, "distribution": record.distribution, "version": record.version,
            "module": record.module, "status": status, "error": record.error,
            "registered": {k: list(record.registered[k]) for k in _KINDS
                           if record.registered.get(k)}}


def _loaded_row(record: plugins.PluginRecord) -> dict[str, Any]:
    row = _row(record, "loaded")
    if "backends" in row["registered"]:
        row["registered"]["backends"] = [_backend_info(n) for n in row["registered"]["backends"]]
    return row


def _backend_info(name: str) -> dict[str, Any]:
    backend = backends()[name]
    available = bool(backend.is_available())
    return {"name": name, "available": available,
            "device_count": backend.device_count() if available else 0,
            "reason": None if available else backend.unavailable_reason(),
            "gemm": backend.gemm_provider() if available else None}


def format_table(report: dict[str, Any], verbose: bool = False) -> str:
    """The report as a plain-text table (one line per plugin, then the failures)."""
    header = ("plugin", "distribution", "version", "status", "registered")
    rows = [(r["name"], r["distribution"], r["version"] or "-", r["status"],
             _describe(r["registered"], verbose)) for r in report["plugins"]]
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(4)]
    lines = [f"pullback {report['pullback']} (hook API {report['hook_api']})", ""]
    for row in [header, *rows]:
        lines.append("  ".join(str(c).ljust(w) for c, w in zip(row, widths)) + "  " + row[4])
    failures = [r for r in report["plugins"] if r["status"] == "failed"]
    if failures:
        lines += ["", "Failed to load (pullback works without them):"]
        lines += [f"  {r['name']} ({r['distribution']} {r['version']}): {r['error']}"
                  for r in failures]
    disabled = [r for r in report["plugins"] if r["status"] == "disabled"]
    if disabled:
        env = ", ".join(f"{k}={v}" for k, v in report["environment"].items() if v is not None)
        lines += ["", f"Disabled by the environment ({env}): "
                  + ", ".join(r["name"] for r in disabled)]
    return "\n".join(lines)


def _describe(registered: dict[str, list[Any]], verbose: bool) -> str:
    if not registered:
        return "nothing"
    parts = []
    for kind, items in registered.items():
        names = [_backend_text(i) if isinstance(i, dict) else i for i in items]
        shown = names if verbose or len(names) <= _SHOWN_NAMES else names[:_SHOWN_NAMES] + ["..."]
        label = kind.replace("_", " ")
        parts.append(f"{label} ({len(names)}): {', '.join(shown)}")
    return "; ".join(parts)


def _backend_text(info: dict[str, Any]) -> str:
    if info["available"]:
        count = info["device_count"]
        gemm = f", GEMM: {info['gemm']}" if info.get("gemm") else ""
        return f"{info['name']} [available, {count} device{'s' if count != 1 else ''}{gemm}]"
    reason = f": {info['reason']}" if info["reason"] else ""
    return f"{info['name']} [unavailable{reason}]"


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``pullback`` console script and of ``python -m pullback``."""
    parser = ArgumentParser(prog="pullback", description="pullback's command line.")
    parser.add_argument("--version", action="version", version=f"pullback {__version__}")
    add_debug_option(parser)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    listing = commands.add_parser(
        "plugins", help="list installed pullback distributions and what each registered")
    listing.add_argument("--json", action="store_true", help="print the report as JSON")
    listing.add_argument("-v", "--verbose", action="store_true",
                         help="list every registered name instead of the first few")
    add_debug_option(listing)
    args = parser.parse_args(argv)
    return run_command(lambda: _plugins(args), "pullback", getattr(args, "debug", False))


def _plugins(args: argparse.Namespace) -> int:
    report = plugins_report()
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(format_table(report, args.verbose))
    return 0
