"""Unit 04's general rules, each checked on generated programs (see grader.engine.claims)."""

import random

import torch

from grader.engine.claims import Trial, claim

# how a tensor comes to exist inside inference_mode, from a normal tensor a made outside it
_MADE_ANEW = {
    "a * 2": lambda a: a * 2,
    "a.relu()": lambda a: a.relu(),
    "a.sum(0)": lambda a: a.sum(0),
    "torch.zeros(3)": lambda a: torch.zeros(3),
    "a.clone()": lambda a: a.clone(),
}
_FROM_A = {
    "a.view(-1)": lambda a: a.view(-1),
    "a.t()": lambda a: a.t(),
    "a[0]": lambda a: a[0],
    "a.mul_(2)": lambda a: a.mul_(2),
    "a.add_(1)": lambda a: a.add_(1),
}


@claim(
    "04.inference-mode-makes-inference-tensors",
    sentence="the tensors it makes anew inside it (results of out-of-place operations and factories) are "
    "*inference tensors*, marked for good",
    holds_when="the tensor is made anew inside the region; a view or an in-place result of a normal tensor "
    "made outside it stays a normal tensor",
)
def inference_mode_makes_inference_tensors():
    for seed in range(20):
        rng = random.Random(seed)
        a = torch.randn(rng.randint(2, 5), rng.randint(2, 5))
        anew = rng.random() < 0.5
        name = rng.choice(sorted(_MADE_ANEW if anew else _FROM_A))
        with torch.inference_mode():
            t = (_MADE_ANEW if anew else _FROM_A)[name](a)
        yield Trial(f"seed {seed}: {name}", condition=anew, holds=t.is_inference())
