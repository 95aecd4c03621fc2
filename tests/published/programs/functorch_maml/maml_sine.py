"""MAML on sine regression, after pytorch/pytorch functorch/examples/maml_regression/evjang.py (commit
0d9e42a, BSD-3-Clause; itself a translation of Eric Jang's JAX example): written again for the doctor's
corpus (tests/published/README.md). As published: a network written as a function of a list of six plain
leaf tensors (``requires_grad_()``, no module), an Adam optimizer on them; for each task an inner step
``torch.autograd.grad(loss, params, create_graph=True)`` and adapted parameters ``params - alpha * grads``
whose query loss is differentiated through that step; the outer loss ``sum(inner_losses) / len(...)``
backpropagated once per iteration; the losses kept detached. At the end five adaptation steps with
``create_graph=True`` on a test task, and the adapted network evaluated (with its graph) for the plot.
Data: sine tasks drawn with numpy, as published. Option added for size: --iterations."""

import argparse
import math

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import torch
from torch.nn import functional as F

mpl.use("Agg")
parser = argparse.ArgumentParser()
parser.add_argument("--iterations", type=int, default=20000)
args = parser.parse_args()


def net(x, params):
    x = F.relu(F.linear(x, params[0], params[1]))
    x = F.relu(F.linear(x, params[2], params[3]))
    return F.linear(x, params[4], params[5])


bound = 1.0 / math.sqrt(40)
params = [
    torch.Tensor(40, 1).uniform_(-1.0, 1.0).requires_grad_(),
    torch.Tensor(40).zero_().requires_grad_(),
    torch.Tensor(40, 40).uniform_(-bound, bound).requires_grad_(),
    torch.Tensor(40).zero_().requires_grad_(),
    torch.Tensor(1, 40).uniform_(-bound, bound).requires_grad_(),
    torch.Tensor(1).zero_().requires_grad_(),
]

opt = torch.optim.Adam(params, lr=1e-3)
alpha = 0.1
K = 20
losses = []
num_tasks = 4


def sample_tasks(outer_batch_size, inner_batch_size):
    amplitudes = [np.random.uniform(low=0.1, high=0.5) for _ in range(outer_batch_size)]
    phases = [np.random.uniform(low=0.0, high=np.pi) for _ in range(outer_batch_size)]

    def get_batch():
        xs, ys = [], []
        for amplitude, phase in zip(amplitudes, phases):
            x = np.random.uniform(low=-5.0, high=5.0, size=(inner_batch_size, 1))
            xs.append(x)
            ys.append(amplitude * np.sin(x + phase))
        return torch.tensor(np.array(xs), dtype=torch.float), torch.tensor(np.array(ys), dtype=torch.float)

    x1, y1 = get_batch()
    x2, y2 = get_batch()
    return x1, y1, x2, y2


def get_loss_for_task(x1, y1, x2, y2):
    loss = F.mse_loss(net(x1, params), y1)
    # the inner step is part of the forward pass: create_graph=True so that the outer backward goes through it
    grads = torch.autograd.grad(loss, params, create_graph=True)
    new_params = [(params[i] - alpha * grads[i]) for i in range(len(params))]
    return F.mse_loss(net(x2, new_params), y2)


for it in range(args.iterations):
    opt.zero_grad()
    task = sample_tasks(num_tasks, K)
    inner_losses = [get_loss_for_task(task[0][i], task[1][i], task[2][i], task[3][i]) for i in range(num_tasks)]
    loss2 = sum(inner_losses) / len(inner_losses)
    loss2.backward()
    opt.step()
    if it % 100 == 0:
        print(f"Iteration {it} -- Outer Loss: {loss2:.4f}")
    losses.append(loss2.detach())

t_A = torch.tensor(0.0).uniform_(0.1, 0.5)
t_b = torch.tensor(0.0).uniform_(0.0, math.pi)
t_x = torch.empty(4, 1).uniform_(-5, 5)
t_y = t_A * torch.sin(t_x + t_b)

opt.zero_grad()
t_params = params
for _ in range(5):
    t_loss = F.l1_loss(net(t_x, t_params), t_y)
    grads = torch.autograd.grad(t_loss, t_params, create_graph=True)
    t_params = [(t_params[i] - alpha * grads[i]) for i in range(len(params))]

test_x = torch.arange(-2 * math.pi, 2 * math.pi, step=0.01).unsqueeze(1)
test_y = t_A * torch.sin(test_x + t_b)
test_f = net(test_x, t_params)

plt.plot(test_x.data.numpy(), test_y.data.numpy(), label="sin(x)")
plt.plot(test_x.data.numpy(), test_f.data.numpy(), label="net(x)")
plt.plot(t_x.data.numpy(), t_y.data.numpy(), "o", label="Examples")
plt.legend()
plt.savefig("maml-sine.png")
plt.figure()
plt.plot(np.convolve(losses, [0.05] * 20))
plt.savefig("losses.png")
