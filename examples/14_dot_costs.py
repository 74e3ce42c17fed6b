"""A diagram with costs: time and bound on each node, the critical path in bold red; and the
collapsed view, one box per layer.

Run: ``python examples/14_dot_costs.py [OUT_DIR]`` (SVG with a DOT renderer; else DOT text);
without OUT_DIR the files go to a temporary folder, removed at the end. Given the model and plan,
the title names the plan, mapping and cost basis and the legend lists the time by op family.
"""

import sys
import tempfile
from pathlib import Path

from v41graph import Plan, Request, compile, load_model, write_diagram
from v41graph.render.dot_costs import render_cost_dot

with tempfile.TemporaryDirectory() as scratch:  # removed at the end unless OUT_DIR is given
    out = Path(sys.argv[1] if len(sys.argv) > 1 else scratch)
    model, plan = load_model(), Plan([Request.prefill(8192)])
    result = compile(model, plan, "h200_sxm")
    print(write_diagram(render_cost_dot(result, layers=range(18, 23), model=model, plan=plan),
                        out / "layers_18_22.svg"))
    print(write_diagram(render_cost_dot(result, collapse=True, model=model, plan=plan), out / "collapsed.svg"))
