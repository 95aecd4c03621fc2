"""Gradients seen at every layer through hooks, after pytorch/tutorials
intermediate_source/visualizing_gradients_tutorial.py (commit 4577e7a, BSD-3-Clause): written again for the
doctor's corpus (tests/published/README.md). As published: two networks of linear, norm and sigmoid
layers (one with BatchNorm1d, one with Identity), each with its SGD optimizer; a forward hook on every leaf
module registers a tensor hook (``output.register_hook``) on the module's output, which appends the
output's gradient to a list during backward; each epoch both lists are cleared, both optimizers zeroed,
both networks run, both losses backpropagated one after the other and both optimizers stepped; then the
mean absolute gradient per layer is plotted. Data: random inputs and labels, as published. Option added
for size: --epochs."""

import argparse

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
import torch.optim as optim
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=10)
args = parser.parse_args()


def fc_layer(in_size, out_size, norm_layer):
    return nn.Sequential(nn.Linear(in_size, out_size), norm_layer(out_size), nn.Sigmoid())


class Net(nn.Module):
    def __init__(self, in_size=28 * 28, hidden_size=128, out_size=10, num_layers=3, batchnorm=False):
        super().__init__()
        norm_layer = nn.BatchNorm1d if batchnorm else nn.Identity
        layers = [fc_layer(in_size, hidden_size, norm_layer)]
        for _ in range(num_layers - 1):
            layers.append(fc_layer(hidden_size, hidden_size, norm_layer))
        layers.append(nn.Linear(hidden_size, out_size))
        self.layers = nn.Sequential(*layers)

    def forward(self, x):
        return self.layers(torch.flatten(x, 1))


x = torch.randn(10, 28, 28)
y = torch.randint(10, (10,))

model_bn = Net(batchnorm=True, num_layers=3)
model_nobn = Net(batchnorm=False, num_layers=3)
model_bn.train()
model_nobn.train()

optimizer_bn = optim.SGD(model_bn.parameters(), lr=0.01, momentum=0.9)
optimizer_nobn = optim.SGD(model_nobn.parameters(), lr=0.01, momentum=0.9)
print(model_bn.layers[0])
print(model_nobn.layers[0])


def hook_forward(module_name, grads, hook_backward):
    def hook(module, args, output):
        """At each forward, a hook on the output tensor that will receive its gradient."""
        output.register_hook(hook_backward(module_name, grads))

    return hook


def hook_backward(module_name, grads):
    def hook(grad):
        grads.append((module_name, grad))

    return hook


def get_all_layers(model, hook_forward, hook_backward):
    layers = {}
    grads = []
    for name, layer in model.named_modules():
        if any(layer.children()) is False:  # leaf modules only
            layers[layer] = name
            layer.register_forward_hook(hook_forward(name, grads, hook_backward))
    return layers, grads


layers_bn, grads_bn = get_all_layers(model_bn, hook_forward, hook_backward)
layers_nobn, grads_nobn = get_all_layers(model_nobn, hook_forward, hook_backward)

for _epoch in range(args.epochs):
    grads_bn.clear()  # the hooks append at every backward
    grads_nobn.clear()

    optimizer_bn.zero_grad()
    optimizer_nobn.zero_grad()

    y_pred_bn = model_bn(x)
    y_pred_nobn = model_nobn(x)

    loss_bn = F.cross_entropy(y_pred_bn, y)
    loss_nobn = F.cross_entropy(y_pred_nobn, y)

    loss_bn.backward()
    loss_nobn.backward()

    optimizer_bn.step()
    optimizer_nobn.step()


def get_grads(grads):
    layer_idx = []
    avg_grads = []
    for idx, (_name, grad) in enumerate(grads):
        if grad is not None:
            avg_grads.append(grad.abs().mean())
            layer_idx.append(len(grads) - 1 - idx)  # appended during backward: last layer first
    return layer_idx, avg_grads


layer_idx_bn, avg_grads_bn = get_grads(grads_bn)
layer_idx_nobn, avg_grads_nobn = get_grads(grads_nobn)
print([f"{g:.2e}" for g in avg_grads_bn])
print([f"{g:.2e}" for g in avg_grads_nobn])

fig, ax = plt.subplots()
ax.plot(layer_idx_bn, avg_grads_bn, label="With BatchNorm", marker="o")
ax.plot(layer_idx_nobn, avg_grads_nobn, label="Without BatchNorm", marker="x")
ax.legend()
plt.show()
