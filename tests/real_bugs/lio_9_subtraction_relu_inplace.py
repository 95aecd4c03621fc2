"""JDAI-CV/LIO#9: a SubBackward0 output "is at version 1; expected version 0"; the asker's question was
whether to change inplace=True into inplace=False.

Symptom: backward raises the version-counter error naming output 0 of SubBackward0.
Mechanism: inplace-on-saved. A difference is squared (pow saves its input, the difference) and then
passed through ReLU(inplace=True), which overwrites that saved difference.
Fix: inplace=False on the activation.
"""

import torch
from torch import nn

THREAD = "JDAI-CV/LIO#9"
MECHANISM = "inplace-on-saved"


def _run(inplace):
    torch.manual_seed(0)
    proj = nn.Linear(7, 7)
    act = nn.ReLU(inplace=inplace)
    feats, centre = torch.randn(10, 7), torch.randn(1, 7)
    diff = proj(feats) - centre
    spread = diff.pow(2).mean()
    mask = act(diff)
    loss = spread + mask.mean()
    loss.backward()
    return [loss.item()]


def bug():
    return _run(inplace=True)


def fixed():
    return _run(inplace=False)
