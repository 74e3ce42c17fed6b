"""A diagram with costs: time and bound on each node, the critical path in bold red; and the
collapsed view, one box per layer.

Run: ``python examples/14_dot_costs.py [OUT_DIR]`` (SVG with a DOT renderer; else DOT text).
"""

import sys
import tempfile
from pathlib import Path

from v41graph import Plan, Request, compile, load_model, write_diagram
from v41graph.render.dot_costs import render_cost_dot

out = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
result = compile(load_model(), Plan([Request.prefill(8192)]), "h200_sxm")
print(write_diagram(render_cost_dot(result, layers=range(18, 23)), out / "layers_18_22.svg"))
print(write_diagram(render_cost_dot(result, collapse=True), out / "collapsed.svg"))
