"""``vgg19``: five 3x3 convolutions with ReLUs and max pooling, VGG's ``features`` in shape but small, with
seeded random weights in place of the pretrained ones (a pretrained file is data the corpus does not fetch)."""

import enum

import torch
from torch import nn


class VGG19_Weights(enum.Enum):
    IMAGENET1K_V1 = "standin"
    DEFAULT = "standin"


class VGG(nn.Module):
    def __init__(self, width=4):
        super().__init__()
        c = width
        self.features = nn.Sequential(
            nn.Conv2d(3, c, 3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(c, c, 3, padding=1),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(c, c, 3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(c, c, 3, padding=1),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(c, c, 3, padding=1),
            nn.ReLU(inplace=True),
        )
        self.classifier = nn.Linear(c, 10)

    def forward(self, x):
        return self.classifier(self.features(x).mean((2, 3)))


def vgg19(pretrained=False, weights=None, **kwargs):
    state = torch.random.get_rng_state()
    torch.manual_seed(19)
    try:
        return VGG()
    finally:
        torch.random.set_rng_state(state)
