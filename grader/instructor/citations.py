"""Where the notebooks cite claims: a markdown sentence carries ``<!-- claim: NN.short-name -->`` after it.

The comment is invisible to the learner (``grader build`` copies markdown as it is, so notebooks/ carries
it too). :func:`citations` reads solutions/ and returns, for each cited claim id, every cell that cites it,
with the cell's prose (comments removed, whitespace normalised) so that a test can check that the
claim's sentence is really what the notebook says.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CITATION = re.compile(r"<!--\s*claim:\s*(\S+?)\s*-->")
_COMMENT = re.compile(r"<!--.*?-->", re.S)


@dataclass(frozen=True)
class Citation:
    notebook: str  # solutions/NN_slug.ipynb's name
    cell: str  # the markdown cell's id
    prose: str  # the cell's text without comments, whitespace normalised

    @property
    def where(self) -> str:
        return f"{self.notebook} {self.cell}"


def normalise(text: str) -> str:
    return " ".join(text.split())


def citations(root: Path = ROOT) -> dict[str, list[Citation]]:
    """{claim id: the markdown cells of solutions/*.ipynb that cite it}, in notebook order."""
    found: dict[str, list[Citation]] = {}
    for path in sorted((root / "solutions").glob("*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        for cell in nb.get("cells", []):
            if cell.get("cell_type") != "markdown":
                continue
            source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
            cited = CITATION.findall(source)
            if not cited:
                continue
            prose = normalise(_COMMENT.sub(" ", source))
            for cid in cited:
                found.setdefault(cid, []).append(Citation(path.name, cell.get("id", ""), prose))
    return found


def cites_sentence(citation: Citation, sentence: str) -> bool:
    """Whether the citing cell states the claim's sentence (whitespace-normalised; comments ignored)."""
    return normalise(sentence) in citation.prose


def problems(root: Path = ROOT) -> list[str]:
    """What is wrong between the notebooks' citations and the declared claims: a cited claim that does not
    exist, a citing cell that does not state the claim's sentence, a claim cited nowhere in its own unit."""
    from grader.engine.claims import load

    declared = load()
    cited = citations(root)
    out = [
        f"{w.where} cites {cid}, which no claims.py declares"
        for cid, ws in cited.items()
        for w in ws
        if cid not in declared
    ]
    for cid, c in sorted(declared.items()):
        where = cited.get(cid, [])
        out += [
            f"{w.where} cites {cid} but does not state its sentence: {c.sentence}"
            for w in where
            if not cites_sentence(w, c.sentence)
        ]
        if not any(w.notebook.startswith(c.unit + "_") for w in where):
            out.append(f"{cid} is cited nowhere in unit {c.unit}'s notebook")
    return out
