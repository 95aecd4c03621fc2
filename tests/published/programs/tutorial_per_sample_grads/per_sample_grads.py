"""Per-sample gradients, after pytorch/tutorials intermediate_source/per_sample_grads.py (commit 0bb46a4,
BSD-3-Clause): written again for the doctor's corpus (tests/published/README.md). As published: a small
CNN; one batch's average gradient with ``loss.backward()``; then each sample's gradient twice, by a loop of
``torch.autograd.grad(loss, list(model.parameters()))`` on one sample at a time, and by
``vmap(grad(compute_loss))`` over ``functional_call`` with the parameters and buffers detached; the two are
compared with ``allclose`` (the float64 baseline it prints on a mismatch is left out), and both are timed
with ``torch.utils.benchmark``. No optimizer. Data: random images and labels, as published. Options added
for size: --batch_size, --repeat (the timing's runs), and the device is the CPU."""

import argparse

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, grad, vmap
from torch.utils.benchmark import Timer

parser = argparse.ArgumentParser()
parser.add_argument("--batch_size", type=int, default=64)
parser.add_argument("--repeat", type=int, default=100)
args = parser.parse_args()
torch.manual_seed(0)


class SimpleCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = torch.flatten(F.max_pool2d(x, 2), 1)
        x = F.relu(self.fc1(x))
        return F.log_softmax(self.fc2(x), dim=1)


def loss_fn(predictions, targets):
    return F.nll_loss(predictions, targets)


device = "cpu"
batch_size = args.batch_size
data = torch.randn(batch_size, 1, 28, 28, device=device)
targets = torch.randint(10, (batch_size,), device=device)

model = SimpleCNN().to(device=device)
predictions = model(data)
loss = loss_fn(predictions, targets)
loss.backward()  # the batch's average gradient


def compute_grad(sample, target):
    prediction = model(sample.unsqueeze(0))
    loss = loss_fn(prediction, target.unsqueeze(0))
    return torch.autograd.grad(loss, list(model.parameters()))


def compute_sample_grads(data, targets):
    sample_grads = [compute_grad(data[i], targets[i]) for i in range(batch_size)]
    return [torch.stack(shards) for shards in zip(*sample_grads)]


per_sample_grads = compute_sample_grads(data, targets)
print(per_sample_grads[0].shape)

params = {k: v.detach() for k, v in model.named_parameters()}
buffers = {k: v.detach() for k, v in model.named_buffers()}


def compute_loss(params, buffers, sample, target):
    predictions = functional_call(model, (params, buffers), (sample.unsqueeze(0),))
    return loss_fn(predictions, target.unsqueeze(0))


ft_compute_grad = grad(compute_loss)
ft_compute_sample_grad = vmap(ft_compute_grad, in_dims=(None, None, 0, 0))
ft_per_sample_grads = ft_compute_sample_grad(params, buffers, data, targets)

for per_sample_grad, ft_per_sample_grad in zip(per_sample_grads, ft_per_sample_grads.values()):
    assert torch.allclose(per_sample_grad, ft_per_sample_grad, atol=3e-3, rtol=1e-5)

without_vmap = Timer(stmt="compute_sample_grads(data, targets)", globals=globals())
with_vmap = Timer(stmt="ft_compute_sample_grad(params, buffers, data, targets)", globals=globals())
no_vmap_timing = without_vmap.timeit(args.repeat)
with_vmap_timing = with_vmap.timeit(args.repeat)
gain = abs(no_vmap_timing.times[0] - with_vmap_timing.times[0]) / no_vmap_timing.times[0]
print(f"Per-sample-grads: {gain * 100:.0f} percent time difference with vmap")
