"""Hogwild training on MNIST, after pytorch/examples mnist_hogwild/main.py (commit 77f55b9, BSD-3-Clause):
written again for the doctor's corpus (tests/published/README.md). As published: the model's parameters
are put in shared memory and trained by ``--num-processes`` worker processes started with
torch.multiprocessing (spawn), each with its own optimizer (train.py); the parent only tests afterwards,
so every backward and optimizer step of the run happens in another process. Data: the torchvision
stand-in's MNIST."""

import argparse

import torch
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch import nn
from torchvision import datasets, transforms
from train import test, train

parser = argparse.ArgumentParser(description="PyTorch MNIST Hogwild Example")
parser.add_argument("--batch-size", type=int, default=64)
parser.add_argument("--test-batch-size", type=int, default=1000)
parser.add_argument("--epochs", type=int, default=10)
parser.add_argument("--lr", type=float, default=0.01)
parser.add_argument("--momentum", type=float, default=0.5)
parser.add_argument("--seed", type=int, default=1)
parser.add_argument("--log-interval", type=int, default=10)
parser.add_argument("--num-processes", type=int, default=2)
parser.add_argument("--save_model", action="store_true")
parser.add_argument("--dry-run", action="store_true")


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


if __name__ == "__main__":
    args = parser.parse_args()
    device = torch.device("cpu")
    transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
    dataset1 = datasets.MNIST("../data", train=True, download=True, transform=transform)
    dataset2 = datasets.MNIST("../data", train=False, transform=transform)
    kwargs = {"batch_size": args.batch_size, "shuffle": True}

    torch.manual_seed(args.seed)
    mp.set_start_method("spawn", force=True)

    model = Net().to(device)
    model.share_memory()  # gradients are allocated lazily, so they are not shared here

    processes = []
    for rank in range(args.num_processes):
        p = mp.Process(target=train, args=(rank, args, model, device, dataset1, kwargs))
        p.start()
        processes.append(p)
    for p in processes:
        p.join()

    if args.save_model:
        torch.save(model.state_dict(), "MNIST_hogwild.pt")
    test(args, model, device, dataset2, kwargs)
