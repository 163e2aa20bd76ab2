"""Docstrings and comments of the five packages cite only what is in the repository: no spec
document and no issue numbers of a tracker a reader of the code cannot open."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).parents[1]
PACKAGES = ("classwatch", "deployments", "flows", "tasks", "metrics_core")
#: "SPEC" as a document ("the SPEC's names", "SPEC section 4"; not a placeholder: SPEC.yaml),
#: "issue 15", "(#12)" (not a colour: "#666666").
CITATION = re.compile(r"\bSPEC\b(?![_.])|\bissues? \d|(?<![\w&])#\d{1,5}\b")


def _prose(path: Path) -> list[tuple[int, str]]:
    """(line, text) of the comments and string literals (docstrings among them) of a module."""
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
    return [(t.start[0], t.string) for t in tokens if t.type in (tokenize.COMMENT, tokenize.STRING)]


def test_no_docstring_or_comment_cites_an_outside_document():
    found = [f"{path.relative_to(ROOT)}:{line}: {CITATION.search(text).group()!r}"
             for pkg in PACKAGES for path in sorted((ROOT / pkg).rglob("*.py"))
             for line, text in _prose(path) if CITATION.search(text)]
    assert found == []
