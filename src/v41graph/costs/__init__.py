"""③ What it costs (docs/architecture.md, "costs").

``value`` is the Cost record and SOL time; ``rules`` one cost rule per op kind, for numbers and
symbols alike; ``hardware`` the chips; ``traffic`` module I/O; ``system`` TTFT / ITL / throughput.
Imports ``model`` and ``ir`` only.
"""
