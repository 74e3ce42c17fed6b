"""docs/architecture.md is the document the code cites: it exists, names every module under src/,
and holds each decision that a docstring points at; no docstring cites a file outside the repository."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
SRC = ROOT / "src" / "v41graph"
# Being split on another branch; its one "DESIGN.md decision 5" becomes "docs/architecture.md,
# decision 5" there. The test below fails once the file no longer cites DESIGN.md, so this entry
# cannot outlive the fix.
PENDING: set[str] = set()


def test_every_module_is_named_in_its_layer():
    text = DOC.read_text(encoding="utf-8")
    missing = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC)
        if path.name in ("__main__.py",) or (path.name == "__init__.py" and rel.parent.name != "passes"):
            continue  # a package's __init__ re-exports; passes/__init__.py holds the pipeline
        if f"`{path.name}`" not in text and f"`{rel.as_posix()}`" not in text:
            missing.append(rel.as_posix())
    assert not missing, f"docs/architecture.md does not name: {missing}"


def test_citations_point_into_the_repository():
    decisions = set(re.findall(r"^(\d)\. \*\*", DOC.read_text(encoding="utf-8"), re.M))
    assert decisions == {str(i) for i in range(1, 9)}
    sections = set(re.findall(r"^##+ (.+)$", DOC.read_text(encoding="utf-8"), re.M))
    for path in sorted(SRC.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        outside = re.search(r"\b(DESIGN|SPEC|STYLE)\.md", text)
        if path.relative_to(SRC).as_posix() in PENDING:
            assert outside, f"{path} is fixed: remove it from PENDING"
            continue
        assert not outside, f"{path} cites a file outside the repository"
        for n in re.findall(r"docs/architecture\.md,? decision (\d)", text):
            assert n in decisions, (path, n)
        for name in re.findall(r'docs/architecture\.md,? \("?([A-Z][\w ]+)"?\)', text):
            assert name in sections, (path, name)
