"""Adversarial examples with the fast gradient sign method, after pytorch/tutorials
beginner_source/fgsm_tutorial.py (commit 03cd491, BSD-3-Clause): written again for the doctor's corpus
(tests/published/README.md). As published: a pretrained LeNet, in eval mode, whose weights still require
grad; each test image is made to require grad (``data.requires_grad = True``), the loss is backpropagated
to it after ``model.zero_grad()``, and ``data.grad.data``'s sign perturbs the image, which is classified
again. No optimizer. Data: the torchvision stand-in's MNIST test set and a stand-in of the pretrained
weights (tests/published/data.py)."""

import argparse

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torchvision import datasets, transforms

parser = argparse.ArgumentParser()
parser.add_argument("--epsilons", type=float, nargs="*", default=[0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3])
args = parser.parse_args()
epsilons = args.epsilons
pretrained_model = "data/lenet_mnist_model.pth"
use_cuda = True


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
        self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
        self.conv2_drop = nn.Dropout2d()
        self.fc1 = nn.Linear(320, 50)
        self.fc2 = nn.Linear(50, 10)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
        x = F.relu(self.fc1(x.view(-1, 320)))
        x = F.dropout(x, training=self.training)
        return F.log_softmax(self.fc2(x), dim=1)


test_loader = torch.utils.data.DataLoader(
    datasets.MNIST("../data", train=False, download=True, transform=transforms.Compose([transforms.ToTensor()])),
    batch_size=1,
    shuffle=True,
)
device = torch.device("cuda" if (use_cuda and torch.cuda.is_available()) else "cpu")
model = Net().to(device)
model.load_state_dict(torch.load(pretrained_model, map_location="cpu"))
model.eval()


def fgsm_attack(image, epsilon, data_grad):
    perturbed_image = image + epsilon * data_grad.sign()
    return torch.clamp(perturbed_image, 0, 1)


def test(model, device, test_loader, epsilon):
    correct = 0
    adv_examples = []
    for data, target in test_loader:
        data, target = data.to(device), target.to(device)
        data.requires_grad = True
        output = model(data)
        init_pred = output.max(1, keepdim=True)[1]
        if init_pred.item() != target.item():
            continue
        loss = F.nll_loss(output, target)
        model.zero_grad()
        loss.backward()
        data_grad = data.grad.data
        perturbed_data = fgsm_attack(data, epsilon, data_grad)
        output = model(perturbed_data)
        final_pred = output.max(1, keepdim=True)[1]
        if final_pred.item() == target.item():
            correct += 1
        if len(adv_examples) < 5 and (final_pred.item() != target.item() or epsilon == 0):
            adv_examples.append((init_pred.item(), final_pred.item(), perturbed_data.squeeze().detach().cpu().numpy()))
    final_acc = correct / float(len(test_loader))
    print(f"Epsilon: {epsilon}\tTest Accuracy = {correct} / {len(test_loader)} = {final_acc}")
    return final_acc, adv_examples


accuracies = []
examples = []
for eps in epsilons:
    acc, ex = test(model, device, test_loader, eps)
    accuracies.append(acc)
    examples.append(ex)

plt.figure(figsize=(5, 5))
plt.plot(epsilons, accuracies, "*-")
plt.yticks(np.arange(0, 1.1, step=0.1))
plt.title("Accuracy vs Epsilon")
plt.show()
