"""Kostis-S-Z/exploring_meta#16: the PPO loss "needs to be manually set to requires_grad=True".

Symptom: without it backward raises "element 0 of tensors does not require grad"; with it nothing trains.
Mechanism: inert-loss-term. The advantage-weighted ratio is built from values that were already
detached (the old policy's and the new policy's log-probs both through .detach()), so the loss has no
path to the policy; marking it requires_grad makes an inert leaf.
Fix: compute the new policy's log-probs with their graph; detach only the old policy's.
"""

import torch
from torch import nn

THREAD = "Kostis-S-Z/exploring_meta#16"
MECHANISM = "inert-loss-term"


def _run(keep_graph):
    torch.manual_seed(0)
    policy = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
    opt = torch.optim.Adam(policy.parameters(), lr=3e-4)
    states, actions, adv = torch.randn(6, 4), torch.randint(0, 2, (6,)), torch.randn(6)
    old_log_probs = torch.log_softmax(policy(states), 1).gather(1, actions[:, None]).squeeze(1).detach()
    losses = []
    for _ in range(2):
        new_log_probs = torch.log_softmax(policy(states), 1).gather(1, actions[:, None]).squeeze(1)
        if not keep_graph:
            new_log_probs = new_log_probs.detach()
        ratio = torch.exp(new_log_probs - old_log_probs)
        loss = -torch.min(ratio * adv, torch.clamp(ratio, 0.8, 1.2) * adv).mean()
        if not keep_graph:
            loss.requires_grad = True
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def bug():
    return _run(keep_graph=False)


def fixed():
    return _run(keep_graph=True)
