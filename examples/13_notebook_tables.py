"""What a notebook shows: short reprs, an HTML summary, one row per node (pandas optional).

Run: ``python examples/13_notebook_tables.py``. In Jupyter, ``display(result)`` renders the table.
"""

from v41graph import Plan, Request, compile, load_model

result = compile(load_model(), Plan([Request.prefill(8192)], decoder_replay="bounded"))
print(repr(result))
print(repr(result.report("schedule")))
print("HTML summary:", len(result._repr_html_()), "characters")
records = result.to_records()
slowest = max(records, key=lambda r: r["time_s"])
print(f"{len(records)} node records; slowest: {slowest['name']} {slowest['time_s'] * 1e3:.3f} ms ({slowest['bound']})")
try:
    df = result.to_pandas()
except Exception as exc:  # pandas is optional
    print(f"pandas not available: {exc}")
else:
    top = df[df.critical].groupby("kind").time_s.sum().sort_values(ascending=False).head(3)
    print("critical path time by op family (ms):", {k: round(v * 1e3, 3) for k, v in top.items()})
