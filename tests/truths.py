"""torch's answer to a question, computed once per test process.

For the tests that only need the answer as an input (to give it, to derive wrong answers from it, to look
for it in earlier outputs). The grader itself never caches an answer: every check in these tests still
runs the question's live experiment, and tests/test_isolation.py runs each one in two learner states.
"""

import copy
import functools

from grader.engine.question import Question, get


@functools.cache
def _truth(qid: str):
    return get(qid).run()


def truth_of(q: Question):
    """A copy of torch's answer to ``q``, so that a test that edits it changes no other test's."""
    return copy.deepcopy(_truth(q.qid))


def asked_now(q: Question):
    """torch's answer to ``q`` as this test's learner is asked it now: on their own program for a generated
    self-test (grader.engine.variants: the program the record has in force), else the question's one answer."""
    from grader.learner.api import variant_of

    v = variant_of(q) if q.program is not None else None
    return q.run(v.program) if v is not None else q.run()
