"""Unit 02's general rules, each checked on generated programs (see grader.engine.claims)."""

import random

import torch

from grader.engine.claims import Trial, claim
from grader.units.programs import programs


def _broadcastable_pair(rng: random.Random) -> tuple[list[int], list[int]]:
    """Two shapes that broadcast: the second may drop leading dimensions and have 1 where the first does not."""
    full = [rng.randint(1, 4) for _ in range(rng.randint(1, 4))]
    other = [1 if rng.random() < 0.4 else n for n in full][rng.randint(0, len(full) - 1) :]
    return (full, other) if rng.random() < 0.5 else (other, full)


@claim(
    "02.gradient-in-the-operands-shape",
    sentence="The gradient always comes back in the operand's own shape",
)
def gradient_in_the_operands_shape():
    ops = (lambda a, b: a * b, lambda a, b: a + b, lambda a, b: a - b, lambda a, b: torch.maximum(a, b))
    for seed in range(30):
        rng = random.Random(seed)
        sa, sb = _broadcastable_pair(rng)
        a, b = torch.randn(sa, requires_grad=True), torch.randn(sb, requires_grad=True)
        rng.choice(ops)(a, b).sum().backward()
        yield Trial(f"seed {seed}: {sa} with {sb}", True, a.grad.shape == a.shape and b.grad.shape == b.shape)


@claim(
    "02.view-never-copies",
    sentence="`view` never copies: it raises instead.",
)
def view_never_copies():
    for seed in range(30):
        rng = random.Random(seed)
        t = torch.randn(rng.randint(1, 4), rng.randint(1, 4), rng.randint(1, 4))
        t = t.permute(*rng.sample(range(3), 3)) if rng.random() < 0.6 else t
        t = t[:, ::2] if rng.random() < 0.3 else t
        shape = rng.choice([[-1], [t.shape[0], -1], [-1, t.shape[-1]]])
        try:
            v = t.view(shape)
        except RuntimeError:
            yield Trial(f"seed {seed}: {list(t.shape)} stride {t.stride()} -> {shape}: raised", True, True)
            continue
        shares = v.untyped_storage().data_ptr() == t.untyped_storage().data_ptr()
        yield Trial(f"seed {seed}: {list(t.shape)} stride {t.stride()} -> {shape}", True, shares)


@claim(
    "02.ones-seed-is-sum",
    sentence="A seed of ones adds every output's gradient together, which is exactly what `.sum()` followed by "
    "`backward()` does.",
)
def ones_seed_is_sum():
    for case in programs(16, seed=2, need_backward=True):
        grads = []
        for seeded in (True, False):
            ns = case.fresh()
            out = ns[case.output]
            out.backward(torch.ones_like(out)) if seeded else out.sum().backward()
            leaves = [t for _, t in sorted(ns.items()) if isinstance(t, torch.Tensor) and t.is_leaf]
            grads.append([t.grad for t in leaves])
        same = all(
            (a is None and b is None) or (a is not None and b is not None and torch.allclose(a, b))
            for a, b in zip(*grads)
        )
        yield Trial(case.label, True, same)


@claim(
    "02.clamp-sends-one-at-its-bound",
    sentence="`z.clamp(min=0)`, which computes the same numbers as `relu`, sends 1 at 0 on torch 2.13",
    holds_when="the corner is clamp's (any bound m, at z == m); relu, whose numbers are the same for m = 0, "
    "sends 0 at 0",
    torch=">=2.13,<2.15",
)
def clamp_sends_one_at_its_bound():
    for seed in range(12):
        rng = random.Random(seed)
        bound = 0.0 if seed < 6 else rng.choice([-1.0, 0.5, 2.0])
        z = torch.full((rng.randint(1, 5),), bound, requires_grad=True)
        is_clamp = seed % 3 != 2 or bound != 0.0
        y = z.clamp(min=bound) if is_clamp else z.relu()
        same_numbers = bound != 0.0 or torch.equal(y, z.detach().relu())
        y.sum().backward()
        label = f"seed {seed}: {'clamp(min=' + str(bound) + ')' if is_clamp else 'relu'} at {bound}"
        yield Trial(label, is_clamp, same_numbers and bool((z.grad == 1).all()))


@claim(
    "02.embedding-is-one-node",
    sentence="Looking up rows of a table with an embedding (`nn.Embedding`, `F.embedding`) records **one** node, "
    "`EmbeddingBackward0`, with one edge to the table.",
    holds_when="the lookup is an embedding; indexing the table yourself, `table[idx]`, records an `IndexBackward0`",
)
def embedding_is_one_node():
    for seed in range(16):
        rng = random.Random(seed)
        rows, width = rng.randint(3, 12), rng.randint(1, 5)
        shape = [rng.randint(1, 4) for _ in range(rng.randint(1, 2))]
        table = torch.randn(rows, width, requires_grad=True)
        index = torch.randint(0, rows, shape)
        embedding = seed % 4 != 3
        if embedding:
            looked_up = (
                torch.nn.functional.embedding(index, table) if seed % 2 else torch.nn.Embedding(rows, width)(index)
            )
            leaf = table if seed % 2 else None
        else:
            looked_up, leaf = table[index], table
        node = looked_up.grad_fn
        edges = [n for n, _ in node.next_functions if n is not None]
        holds = (
            type(node).__name__ == "EmbeddingBackward0"
            and len(edges) == 1
            and hasattr(edges[0], "variable")
            and (leaf is None or edges[0].variable is leaf)
        )
        way = "table[idx]" if not embedding else ("F.embedding" if seed % 2 else "nn.Embedding")
        yield Trial(f"seed {seed}: {way}, table ({rows}, {width}), index {shape}", embedding, holds)
