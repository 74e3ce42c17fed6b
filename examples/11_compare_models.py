"""V4-Flash vs V4.1-Flash on one 128K prefill, and TP1 vs TP8/EP8 on one model, side by side.

Run: ``python examples/11_compare_models.py``.
"""

from v41graph import Plan, Request, Side, compare, load_model
from v41graph.render.text.compare_text import compare_markdown, compare_text

v4, v41 = load_model("deepseek-v4-flash"), load_model("deepseek-v4.1-flash")
prefill = [Request.prefill(131072)]
c = compare(Side(v4, Plan(prefill, fusion="two-pass")), Side(v41, Plan(prefill)))
print(compare_text(c).split("\n\nby op")[0])  # labels, totals and stages
d = c["totals"]["total_time_s"]
print(f"V4.1 / V4 forward time: {d['ratio']:.3f}")
m = compare(Side(v41, Plan([Request.decode(8192, copies=64)])),
            Side(v41, Plan([Request.decode(8192, copies=64)], tp=8, ep=8)))
print(compare_markdown(m).splitlines()[0])
print(f"TP8/EP8 decode speedup: {m['delta']['speedup']:.2f}x")
