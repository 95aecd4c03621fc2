"""Unit 06's own answer kind: a pair of gradients for each of the three ways of the two-losses exercise."""

from __future__ import annotations

from grader.engine.kinds import BadAnswer, Kind
from grader.units.unit06.support import close_enough

# the three ways of computing two losses' gradients, in the order every answer lists them
WAYS = ("retain_graph", "two_forwards", "one_call")


class GradPairs(Kind):
    """For each way, the pair (gradient of loss_a, gradient of loss_b) as flat tuples of numbers."""

    label = "a pair of gradients for each way"

    def __init__(self, tol: float = 1e-4, rel: float = 1e-4):
        self.tol, self.rel = tol, rel

    def describe(self):
        return "for each way, a pair (gradient of loss_a, gradient of loss_b)"

    def read(self, answer):
        if not isinstance(answer, (list, tuple)) or len(answer) != len(WAYS):
            raise BadAnswer(f"expected {self.describe()}")
        out = []
        for entry, way in zip(answer, WAYS):
            if not isinstance(entry, (list, tuple)) or len(entry) != 3 or entry[0] != way:
                raise BadAnswer(f"expected {self.describe()}")
            out.append((way, tuple(float(v) for v in entry[1]), tuple(float(v) for v in entry[2])))
        return tuple(out)

    def agrees(self, truth, value):
        return all(
            close_enough(t[1], v[1], self.tol, self.rel) and close_enough(t[2], v[2], self.tol, self.rel)
            for t, v in zip(truth, value)
        )

    @staticmethod
    def _vec(values) -> str:
        return "[" + ", ".join(f"{v:.4f}" for v in values) + "]"

    def show(self, value):
        if all(v[1:] == value[0][1:] for v in value):
            return f"grad_a {self._vec(value[0][1])}, grad_b {self._vec(value[0][2])} (every way)"
        return "\n".join(f"{way}: grad_a {self._vec(a)}, grad_b {self._vec(b)}" for way, a, b in value)

    def encode(self, value):
        return [[way, list(a), list(b)] for way, a, b in value]

    def verdict_note(self, truth, value):
        for (way, ta, tb), (_, va, vb) in zip(truth, value):
            if close_enough(ta, va) and close_enough(tb, vb):
                continue
            both = tuple(x + y for x, y in zip(ta, tb))
            if close_enough(va, both) and close_enough(vb, both):
                why = (
                    "both are grad_a + grad_b: one torch.autograd.grad call over [loss_a, loss_b] adds "
                    "their gradients; ask for each loss separately (is_grads_batched=True)"
                )
            elif close_enough(va, ta) and close_enough(vb, both):
                why = (
                    "your grad_b is grad_a + grad_b: w.grad still held the first gradient when the second "
                    "backward added to it; clone the first and set w.grad = None between the two"
                )
            elif close_enough(va, tb) and close_enough(vb, ta):
                why = "grad_a and grad_b are swapped"
            elif close_enough(va, tb) and close_enough(vb, tb):
                why = (
                    "your grad_a came out equal to grad_b: it was w.grad itself, which the second pass "
                    "changed in place; keep a .clone() of the first gradient"
                )
            elif close_enough(va, vb):
                why = "your two gradients have the same values"
            else:
                why = "compare it with the gradients torch.func computes for this case"
            return f"way {way!r} disagrees with torch: {why}"
        return ""
