"""② What runs: the plan and the graph (docs/architecture.md, "ir").

``plan`` holds requests and policies; ``ledger`` expands them into per-layer token rows;
``ops`` and ``graph`` are the typed IR and ``verify()``; ``lower`` builds the graph. Imports only
``model`` (and the shared errors, symbols and algebra).
"""
