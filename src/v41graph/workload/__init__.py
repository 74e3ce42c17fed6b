"""Workload: the content a plan reads — token ids, the tokenizer, corpora, traces (docs/architecture.md, "Layers")."""
