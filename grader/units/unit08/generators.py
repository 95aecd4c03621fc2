"""Unit 08's self-test generators (grader.engine.variants): each draws a program of the same mechanism per learner
and attempt; the first option of every choice is the program the self-test asked before it had variants.

The unit's own cells run its loop (``hidden = hidden * w + 0.1``); a drawn program names its state, its weight and
its constant otherwise (:meth:`Draw.other`), so that no program of a self-test is one the unit showed."""

from __future__ import annotations

from grader.engine.variants import Draw, Listing

WHICH_K = ("k=1", "k=2", "k=3", "k=6", "none of them")
# when the state is detached (after the step's backward)
DETACHES = ("step % 3 == 0", "step % 2 == 0", "True", "step == 6", "step in (2, 5)", "step in (1, 4)")


def _names(d: Draw) -> tuple[str, str, float]:
    """The state's name, the weight's and the constant added each step: the unit's own, or others."""
    return d.other(("hidden", "w", 0.1), [("h", "a", 0.2), ("s", "v", 0.3), ("g", "u", 0.05), ("z", "m", 0.25)])


def _detach(state: str, when: str | None, indent: str = "    ") -> list[str]:
    if when is None:
        return []
    if when == "True":
        return [f"{indent}{state} = {state}.detach()"]
    return [f"{indent}if {when}:", f"{indent}    {state} = {state}.detach()"]


def which_k_program(d: Draw) -> Listing:
    """08.which-k-per-step: a backward with retain_graph=True on every step's own loss over 6 steps, the state
    detached after some steps: each loss reaches back to the last detach, so the sum is a k-step truncation when
    the detaches fall every k steps, and none of them otherwise."""
    state, weight, bias = _names(d)
    w, h0 = d.one([(0.7, 1.0), (0.9, 1.0), (0.5, 2.0), (1.1, 0.5)])
    when = d.one(DETACHES)
    lines = [
        f"{weight} = torch.tensor({w}, requires_grad=True)",
        f"{state} = torch.tensor({h0})",
        "for step in range(1, 7):",
        f"    {state} = {state} * {weight} + {bias}",
        f"    ({state} ** 2).backward(retain_graph=True)",
        *_detach(state, when),
    ]
    ask = (
        f"Its {weight}.grad equals the k-step truncation (the same loop, backward of each chunk of k steps' summed "
        "losses, then detach) with which k? One of " + ", ".join(repr(k) for k in WHICH_K) + "."
    )
    return Listing("\n".join(lines), ask, {"w": w, "h0": h0, "bias": bias, "weight": weight})


def chunk_depth_program(d: Draw) -> Listing:
    """08.chunk-depth: k-step truncation by chunks; the depth of one step's own loss is set by its place in its
    chunk (an add and a multiply per step since the last detach, the power node, the weight's AccumulateGrad)."""
    state, weight, bias = _names(d)
    steps, k = d.one([(7, 3), (8, 3), (7, 2), (9, 4), (6, 4), (10, 3)])
    asked = d.integer(1, steps, 6)
    w = d.one([0.9, 0.6, 1.2])
    lines = [
        f"{weight} = torch.tensor({w}, requires_grad=True)",
        f"{state}, pending = torch.tensor(1.0), 0",
        f"for step in range(1, {steps + 1}):",
        f"    {state} = {state} * {weight} + {bias}",
        f"    loss = {state} ** 2",
        f"    if step == {asked}:",
        "        asked = loss",
        "    pending = pending + loss",
        f"    if step % {k} == 0 or step == {steps}:",
        "        pending.backward()",
        f"        pending, {state} = 0, {state}.detach()",
    ]
    ask = f"What is probes.depth(asked), the depth of step {asked}'s own loss (as it was before its backward)?"
    return Listing("\n".join(lines), ask, {"asked": asked, "k": k})


RETAIN_K1 = (
    "unchanged",
    "it becomes the full-history value",
    "it lands between the two",
    "it raises at step 2's backward",
)
# (whether the backward retains the graph, when the state is detached (None: never))
CHANGES = ((True, "True"), (True, None), (False, None), (True, "step % 2 == 0"), (True, "step == 3"))


def retain_k1_program(d: Draw) -> Listing:
    """08.retain-k1: the k = 1 loop (plain backward, a detach every step) changed: retain_graph added, the detach
    made rarer or dropped. retain_graph decides only whether saved values survive; detach decides how far back a
    loss reaches."""
    state, weight, bias = _names(d)
    retain, when = d.one(CHANGES)
    steps = d.one([5, 4, 6])
    w = d.one([0.9, 0.5, 1.2])
    lines = [
        f"{weight} = torch.tensor({w}, requires_grad=True)",
        f"{state} = torch.tensor(1.0)",
        f"for step in range(1, {steps + 1}):",
        f"    {state} = {state} * {weight} + {bias}",
        f"    loss = {state} ** 2",
        f"    loss.backward({'retain_graph=True' if retain else ''})",
        *_detach(state, when),
    ]
    ask = (
        f"Compared with the same loop written with a plain loss.backward() and {state} = {state}.detach() after "
        f"every step (k = 1), what happens to {weight}.grad after the last step? One of "
        + ", ".join(repr(c) for c in RETAIN_K1)
        + " (the two: the k = 1 value and the full-history value)."
    )
    return Listing("\n".join(lines), ask, {"w": w, "steps": steps, "bias": bias, "weight": weight})


def detach_early_program(d: Draw) -> Listing:
    """08.detach-early: a smoother carries c across five steps; where the detach sits (before the loss uses c, after
    the backward, on some steps only, or nowhere) decides whether and where a backward fails."""
    a0, c0 = d.one([(0.5, 2.0), (0.8, 1.5), (1.5, 0.5), (0.3, 3.0)])
    update = d.one(["(c * a).tanh()", "(c * a).sigmoid()", "(c * a).tanh()", "c * a + 0.5"])
    where = d.one(["before err", "after backward", "before err from step 2", "after backward on odd steps", "never"])
    detach = {
        "before err": ("    c = c.detach()", ""),
        "before err from step 2": ("    if step >= 2:\n        c = c.detach()", ""),
        "after backward": ("", "    c = c.detach()"),
        "after backward on odd steps": ("", "    if step % 2 == 1:\n        c = c.detach()"),
        "never": ("", ""),
    }[where]
    body = "\n".join(line for line in (f"    c = {update}", detach[0], "    err = (c - 1) ** 2") if line)
    after = detach[1]
    setup = f"a = torch.tensor({a0}, requires_grad=True)\nc = torch.tensor({c0})"
    source = "\n".join(line for line in (setup, "for step in range(1, 6):", body, "    err.backward()", after) if line)
    ask = (
        "Where does it fail, if anywhere: 'no error' or 'at step n's backward' (n from 1 to 5)? (The place is graded.)"
    )
    return Listing(source, ask, {"setup": setup, "body": body, "after": after, "where": where})
