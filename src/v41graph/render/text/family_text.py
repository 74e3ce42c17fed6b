"""Op families as text: one row per family with its node time, share, flops and bytes.

Takes the ``by_family`` dict of :meth:`~v41graph.analysis.families.FamilyBreakdown.as_dict` (the
``breakdown.by_family`` of ``cost --json``); the rule that split fused modules is stated under it.

>>> rows = {"families": {"attention": {"time_s": 0.003, "flops": 2e12, "bytes": 4e9},
...                      "routed experts": {"time_s": 0.001, "flops": 1e12, "bytes": 8e9}},
...         "total_time_s": 0.004, "split_modules": 0, "rule": "split by SOL shares"}
>>> print("\\n".join(family_lines(rows)))
node time by op family (Σ 4.000 ms; split by SOL shares):
  family                   time   share     TFLOP         GB
  attention            3.000 ms   75.0%     2.000       4.00
  routed experts       1.000 ms   25.0%     1.000       8.00
"""

from __future__ import annotations

from typing import Any

from ..terminal import seconds as _seconds


def family_lines(by_family: dict[str, Any]) -> list[str]:
    """Header plus one line per family, largest time first (ties by name), with flops and bytes."""
    total = by_family["total_time_s"]
    fams = sorted(by_family["families"].items(), key=lambda kv: (-kv[1]["time_s"], kv[0]))
    split = by_family["split_modules"]
    head = (f"node time by op family (Σ {_seconds(total)}; {by_family['rule']}"
            + (f", {split} fused modules split" if split else "") + "):")
    lines = [head, f"  {'family':<16} {'time':>12}   share     TFLOP         GB"]
    for name, v in fams:
        share = 100 * v["time_s"] / total if total else 0.0
        lines.append(f"  {name:<16} {_seconds(v['time_s']):>12}  {share:5.1f}%  {v['flops'] / 1e12:8.3f}"
                     f"  {v['bytes'] / 1e9:9.2f}")
    return lines
