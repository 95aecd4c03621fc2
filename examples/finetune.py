"""A small fine-tuning script of the kind found in many repositories (not part of the course).

It pre-trains a regressor on one task, then fine-tunes it on a second one with a fresh head. Run it
under the course's doctor:

    python -m grader doctor examples/finetune.py --steps 20
"""

import argparse

import torch
from torch import nn


class Regressor(nn.Module):
    def __init__(self, inputs=8, hidden=16):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(inputs, hidden), nn.ReLU(inplace=True), nn.Linear(hidden, hidden))
        self.head = nn.Linear(hidden, 1)

    def forward(self, x):
        return self.head(torch.tanh(self.encoder(x))).squeeze(-1)


def batches(n, seed, rows=32, inputs=8):
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(inputs, generator=g)
    for _ in range(n):
        x = torch.randn(rows, inputs, generator=g)
        yield x, torch.sin(x @ w)


def train(model, opt, data):
    losses = []
    for x, y in data:
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = Regressor()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    first = train(model, opt, batches(args.steps, seed=1))
    print(f"pre-training: loss {first[0]:.3f} -> {first[-1]:.3f}")

    model.head = nn.Linear(16, 1)  # a fresh head for the new task (the optimizer still holds the old one)
    second = train(model, opt, batches(args.steps, seed=2))
    print(f"fine-tuning: loss {second[0]:.3f} -> {second[-1]:.3f}")


if __name__ == "__main__":
    main()
