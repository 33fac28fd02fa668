"""Compare two ``bench/quality.py --json`` results of the same data set, mode by mode: the headline
metrics side by side with their difference, and how many queries scored differently.

Usage (from the repository root)::

    .venv/bin/python bench/compare.py sqlite.json postgres.json

Made for store parity (``--store sqlite`` against ``--store postgres``), usable for any two runs.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def _headline(mode: dict[str, Any], label: str) -> dict[str, Any]:
    rows = [row for row in mode["rows"] if row["label"] == label]
    return rows[0] if rows else mode["rows"][-1]


def compare(left: dict[str, Any], right: dict[str, Any]) -> list[str]:
    """Lines of the comparison (a table per mode present in both)."""
    if left["dataset"] != right["dataset"]:
        raise SystemExit(f"different data sets: {left['dataset']} and {right['dataset']}")
    lines = [f"{left['dataset']}: {left['settings'].get('store', '?')} against {right['settings'].get('store', '?')}"]
    theirs = {mode["mode"]: mode for mode in right["modes"]}
    for mode in left["modes"]:
        other = theirs.get(mode["mode"])
        if other is None:
            continue
        a, b = _headline(mode, left["headline"]), _headline(other, right["headline"])
        metrics = [key for key, value in a.items() if isinstance(value, float) and key in b and key != "chars"]
        worst = max((abs(b[key] - a[key]), key) for key in metrics)
        per_query = {q["id"]: q for q in other["queries"]}
        differing = sum(
            1 for q in mode["queries"] if any(abs(q[k] - per_query[q["id"]][k]) > 1e-9 for k in metrics if k in q)
        )
        lines.append(f"\n{mode['mode']} (n = {a['n']}): largest |Δ| {worst[0]:.4f} ({worst[1]}); "
                     f"{differing} of {len(mode['queries'])} queries scored differently")  # fmt: skip
        lines.append(f"  {'metric':18} {'left':>8} {'right':>8} {'Δ':>8}")
        lines += [f"  {key:18} {a[key]:8.4f} {b[key]:8.4f} {b[key] - a[key]:+8.4f}" for key in metrics]
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2:
        raise SystemExit(__doc__)
    left, right = (json.loads(Path(arg).read_text(encoding="utf-8")) for arg in args)
    print("\n".join(compare(left, right)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
