"""Draw layers 18–22 of an 8K prefill (the encoder → decoder boundary) with each node's SOL cost.

`v41graph.compile` runs the passes and the schedule on a hardware description; its graph carries
a `schedule` side table (per node: SOL time and the resource that bounds it). `render_dot` puts
that under each node's name, and `write_diagram` writes the DOT text and renders the SVG (with
the `graphviz-pure` renderer that the package installs, or a system `dot`).

    python examples/02_boundary_diagram.py [OUT_DIR]      # default OUT_DIR: boundary-diagram
"""

import sys
from pathlib import Path

import v41graph
from v41graph import Plan, Request, load_model, render_dot, write_diagram

out = Path(sys.argv[1] if len(sys.argv) > 1 else "boundary-diagram")
out.mkdir(parents=True, exist_ok=True)

model = load_model()
compiled = v41graph.compile(model, Plan([Request.prefill(8192)], decoder_replay="bounded"), "h200_sxm")
slots = compiled.graph.annotation("schedule")  # node id → NodeSlot(sol, start, finish, critical)

layers = range(18, 23)
drawn = [n for n in compiled.graph.nodes.values() if n.layer in layers]
notes = {n.id: f"{float(slots[n.id].sol.time) * 1e6:,.1f} µs · {slots[n.id].sol.bound}" for n in drawn}
text = render_dot(compiled.graph, layers=layers, node_notes=notes,
                  title="V4.1-Flash · 8K prefill, replay bounded · layers 18–22 · SOL on H200")

print(write_diagram(text, out / "boundary.dot"))
print(write_diagram(text, out / "boundary.svg"))

print(f"nodes drawn: {len(drawn)}")
for layer in layers:
    here = [n for n in drawn if n.layer == layer]
    total = sum(float(slots[n.id].sol.time) for n in here)
    print(f"layer {layer} ({here[0].stage}, {here[0].path}): {len(here)} nodes, Σ SOL {total * 1e3:.3f} ms")
slowest = max(drawn, key=lambda n: (slots[n.id].sol.time, n.id))
print(f"slowest drawn node: {slowest.id} ({notes[slowest.id]})")
