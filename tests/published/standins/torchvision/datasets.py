"""Datasets of synthetic images with the real shapes, in place of downloads; sizes from the environment."""

import os

import numpy as np
import torch
from PIL import Image


def _count(variable: str, default: int) -> int:
    return int(os.environ.get(variable, default))


class MNIST(torch.utils.data.Dataset):
    """28 x 28 grey images (PIL, as torchvision gives them) with labels 0, 1, 2, 0, 1, 2, ..."""

    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        n = _count("STANDIN_TRAIN", 16) if train else _count("STANDIN_TEST", 8)
        generator = torch.Generator().manual_seed(1 if train else 2)
        self.data = (torch.rand(n, 28, 28, generator=generator) * 255).to(torch.uint8)
        self.targets = torch.arange(n) % 3
        self.transform, self.target_transform = transform, target_transform

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        image, target = Image.fromarray(self.data[index].numpy(), mode="L"), int(self.targets[index])
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target


class FakeData(torch.utils.data.Dataset):
    """Random RGB images of ``image_size`` (channels, height, width); ``STANDIN_FAKE`` of them when set."""

    def __init__(self, size=1000, image_size=(3, 224, 224), num_classes=10, transform=None, target_transform=None):
        self.size = _count("STANDIN_FAKE", size)
        self.image_size, self.num_classes = image_size, num_classes
        self.transform, self.target_transform = transform, target_transform

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        generator = torch.Generator().manual_seed(index)
        pixels = (torch.rand(*self.image_size, generator=generator) * 255).to(torch.uint8)
        image = Image.fromarray(np.ascontiguousarray(pixels.permute(1, 2, 0).numpy()), mode="RGB")
        target = index % self.num_classes
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target


class ImageFolder(torch.utils.data.Dataset):
    """Images read from ``root/<class>/<file>`` (written by tests/published/data.py), classes in sorted order."""

    def __init__(self, root, transform=None, target_transform=None):
        self.classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
        self.class_to_idx = {name: i for i, name in enumerate(self.classes)}
        self.samples = [
            (os.path.join(root, name, file), self.class_to_idx[name])
            for name in self.classes
            for file in sorted(os.listdir(os.path.join(root, name)))
        ]
        self.targets = [target for _, target in self.samples]
        self.transform, self.target_transform = transform, target_transform

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, index):
        path, target = self.samples[index]
        with open(path, "rb") as f:
            image = Image.open(f).convert("RGB")
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target
