"""Every exercise's generated cases implement the Case protocol, and come back the same each time."""

import pytest

from grader.engine.cases import Case, problems
from grader.engine.kinds import Function
from grader.engine.question import all_questions

EXERCISES = [q for q in all_questions() if isinstance(q.kind, Function)]


@pytest.mark.parametrize("q", EXERCISES, ids=lambda q: q.qid)
def test_every_case_implements_the_protocol(q):
    cases = q.kind.cases()
    assert cases, f"{q.qid} generates no case"
    for i, case in enumerate(cases):
        assert isinstance(case, Case) and not problems(case), f"{q.qid} case {i}: {problems(case)}"
    sizes = [c.size for c in cases]
    assert sizes == sorted(sizes), f"{q.qid}: cases are not smallest first"
    labels = [c.label for c in cases]
    assert len(set(labels)) == len(labels), f"{q.qid}: two cases share a label"


def test_a_class_that_lacks_a_member_is_named():
    class Half:
        label, source, size = "x", "y = 1", 1

        def fresh(self):
            return {}

    assert not isinstance(Half(), Case)
    assert problems(Half()) == ["no output", "no drawing_label", "no drawing()"]
    Half.output, Half.drawing_label, Half.size = "y", None, True
    assert problems(Half()) == ["size is bool", "no drawing()"]


@pytest.mark.parametrize("q", EXERCISES, ids=lambda q: q.qid)
def test_a_generated_program_lists_only_the_leaves_it_uses(q):
    """Issue 27: smallest failing cases showed leaves (``c = torch.tensor(...)``) that no line of them used."""
    import re

    from grader.units.programs import Program

    for case in q.kind.cases():
        program = case if isinstance(case, Program) else getattr(case, "program", None)
        if not isinstance(program, Program):
            continue
        body = "\n".join(program.lines[len(program.leaves) :])
        unused = [name for name in program.leaves if not re.search(rf"\b{name}\b", body)]
        assert not unused, f"{q.qid}, {program.label}: {unused} never used\n{program.source}"
