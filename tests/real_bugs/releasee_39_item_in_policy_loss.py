"""isayev/ReLeaSE#39: the policy's weights do not change; its gradients are None.

Symptom: after changing the reinforcement loss to use `.item()` (to avoid a CUDA-to-numpy error) the
generator's grads are None; the maintainer: that change detaches the loss from the graph.
Mechanism: inert-loss-term. The reinforcement term is built from log_prob.item(): a number, so the term
adds to the loss's value and sends no gradient to the policy.
Fix: keep the tensor: rl_loss = rl_loss - log_prob * reward.
"""

import torch
from torch import nn

THREAD = "isayev/ReLeaSE#39"
MECHANISM = "inert-loss-term"


def _run(keep_tensor):
    torch.manual_seed(0)
    policy = nn.Linear(4, 3)
    value = nn.Linear(4, 1)
    opt = torch.optim.Adam(list(policy.parameters()) + list(value.parameters()), lr=1e-2)
    losses = []
    for _ in range(3):
        state, reward = torch.randn(1, 4), 0.7
        log_probs = torch.log_softmax(policy(state), dim=1)
        top_i = int(torch.argmax(log_probs))
        if keep_tensor:
            rl_loss = -log_probs[0, top_i] * reward
        else:
            rl_loss = torch.tensor(-log_probs[0, top_i].item() * reward)
        loss = value(state).pow(2).mean() + rl_loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def bug():
    return _run(keep_tensor=False)


def fixed():
    return _run(keep_tensor=True)
