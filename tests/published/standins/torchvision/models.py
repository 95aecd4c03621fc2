"""``vgg19`` (five 3x3 convolutions with ReLUs and max pooling, VGG's ``features`` in shape but small) and
``resnet18`` (a small ResNet with the same attributes), with seeded random weights in place of the pretrained
ones (a pretrained file is data the corpus does not fetch)."""

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


class ResNet18_Weights(enum.Enum):
    IMAGENET1K_V1 = "standin"
    DEFAULT = "standin"


class BasicBlock(nn.Module):
    """ResNet's basic block: two 3x3 convolutions with BatchNorm, the input added back, ReLUs in place."""

    def __init__(self, channels_in, channels, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(channels_in, channels, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(channels, channels, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        self.downsample = None
        if stride != 1 or channels_in != channels:
            self.downsample = nn.Sequential(
                nn.Conv2d(channels_in, channels, 1, stride, bias=False), nn.BatchNorm2d(channels)
            )

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += identity
        return self.relu(out)


class ResNet(nn.Module):
    """``resnet18`` in shape (stem, four stages, average pooling, ``fc`` with ``in_features``), one block a
    stage and a few channels, so that a corpus run trains in milliseconds."""

    def __init__(self, width=4, num_classes=1000):
        super().__init__()
        c = width
        self.conv1 = nn.Conv2d(3, c, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        self.layer1 = nn.Sequential(BasicBlock(c, c))
        self.layer2 = nn.Sequential(BasicBlock(c, 2 * c, 2))
        self.layer3 = nn.Sequential(BasicBlock(2 * c, 2 * c, 2))
        self.layer4 = nn.Sequential(BasicBlock(2 * c, 2 * c, 2))
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(2 * c, num_classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def resnet18(pretrained=False, weights=None, **kwargs):
    state = torch.random.get_rng_state()
    torch.manual_seed(18)
    try:
        return ResNet()
    finally:
        torch.random.set_rng_state(state)
