"""Transfer learning for an image classifier, after pytorch/tutorials beginner_source/transfer_learning_tutorial.py
(commit 039ee0e, BSD-3-Clause): written again for the doctor's corpus (tests/published/README.md). As
published: a pretrained ResNet-18 used two ways. As a fixed feature extractor, every parameter is frozen
(``requires_grad = False``), then ``fc`` is replaced by a new layer and the optimizer is built on ``fc``
alone; fine-tuned, ``fc`` is replaced and the optimizer gets two parameter groups (the new head at a
larger learning rate). Each epoch has a training phase under ``torch.set_grad_enabled(True)`` and a
validation phase with grad disabled, ``optimizer.zero_grad()`` in both, the running loss kept through
``loss.item()``, the best weights copied with ``copy.deepcopy(model.state_dict())`` and loaded at the end,
and predictions shown under ``no_grad``. The Co-Tuning section is left out. Data: the torchvision
stand-in's ImageFolder over random images in two classes (tests/published/data.py) and its resnet18
(small, seeded weights in place of the pretrained ones). Options added for size: --num_epochs,
--batch_size, --image_size, --workers."""

import argparse
import copy
import os
import random
import time

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.optim as optim
import torchvision
from torch import nn
from torch.optim import lr_scheduler
from torchvision import datasets, models, transforms

parser = argparse.ArgumentParser()
parser.add_argument("--num_epochs", type=int, default=25)
parser.add_argument("--batch_size", type=int, default=64)
parser.add_argument("--image_size", type=int, default=224)
parser.add_argument("--workers", type=int, default=4)
args = parser.parse_args()

seed = 0
torch.manual_seed(seed)
random.seed(seed)
np.random.seed(seed)
plt.ion()

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
size = args.image_size
data_transforms = {
    "train": transforms.Compose(
        [
            transforms.RandomResizedCrop(size),
            transforms.RandomHorizontalFlip(),
            transforms.ToTensor(),
            transforms.Normalize(MEAN, STD),
        ]
    ),
    "val": transforms.Compose(
        [
            transforms.Resize(size * 8 // 7),
            transforms.CenterCrop(size),
            transforms.ToTensor(),
            transforms.Normalize(MEAN, STD),
        ]
    ),
}

data_dir = "data/hymenoptera_data"
image_datasets = {x: datasets.ImageFolder(os.path.join(data_dir, x), data_transforms[x]) for x in ["train", "val"]}
dataloaders = {
    x: torch.utils.data.DataLoader(
        image_datasets[x], batch_size=args.batch_size, shuffle=(x == "train"), num_workers=args.workers
    )
    for x in ["train", "val"]
}
dataset_sizes = {x: len(image_datasets[x]) for x in ["train", "val"]}
class_names = image_datasets["train"].classes
device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")


def imshow(inp, title=None):
    inp = inp.numpy().transpose((1, 2, 0))
    inp = np.clip(np.array(STD) * inp + np.array(MEAN), 0, 1)
    plt.imshow(inp)
    if title is not None:
        plt.title(title)
    plt.pause(0.001)


inputs, classes = next(iter(dataloaders["train"]))
out = torchvision.utils.make_grid(inputs[:4])
imshow(out, title=[class_names[x] for x in classes[:4]])


def train_model(model, criterion, optimizer, scheduler, num_epochs=25):
    since = time.time()
    best_model_wts = copy.deepcopy(model.state_dict())
    best_acc = 0.0

    for epoch in range(num_epochs):
        print(f"Epoch {epoch}/{num_epochs - 1}")
        for phase in ["train", "val"]:
            if phase == "train":
                model.train()
            else:
                model.eval()

            running_loss = 0.0
            running_corrects = 0
            for inputs, labels in dataloaders[phase]:
                inputs = inputs.to(device)
                labels = labels.to(device)
                optimizer.zero_grad()

                with torch.set_grad_enabled(phase == "train"):
                    outputs = model(inputs)
                    _, preds = torch.max(outputs, 1)
                    loss = criterion(outputs, labels)
                    if phase == "train":
                        loss.backward()
                        optimizer.step()

                running_loss += loss.item() * inputs.size(0)
                running_corrects += torch.sum(preds == labels.data)
            if phase == "train":
                scheduler.step()

            epoch_loss = running_loss / dataset_sizes[phase]
            epoch_acc = running_corrects.double() / dataset_sizes[phase]
            print(f"{phase} Loss: {epoch_loss:.4f} Acc: {epoch_acc:.4f}")

            if phase == "val" and epoch_acc > best_acc:
                best_acc = epoch_acc
                best_model_wts = copy.deepcopy(model.state_dict())

    elapsed = time.time() - since
    print(f"Training complete in {elapsed // 60:.0f}m {elapsed % 60:.0f}s; best val Acc: {best_acc:4f}")
    model.load_state_dict(best_model_wts)
    return model


def visualize_model(model, num_images=6):
    was_training = model.training
    model.eval()
    images_so_far = 0
    plt.figure()
    with torch.no_grad():
        for inputs, labels in dataloaders["val"]:
            inputs = inputs.to(device)
            outputs = model(inputs)
            _, preds = torch.max(outputs, 1)
            for j in range(inputs.size()[0]):
                images_so_far += 1
                ax = plt.subplot(num_images // 2, 2, images_so_far)
                ax.axis("off")
                ax.set_title(f"label: {class_names[labels[j]]}; predicted: {class_names[preds[j]]}")
                imshow(inputs.cpu().data[j])
                if images_so_far == num_images:
                    model.train(mode=was_training)
                    return
        model.train(mode=was_training)


# 1. The ConvNet as a fixed feature extractor: freeze everything, then add a new head (its parameters
# require grad, being new) and optimize the head alone.
model_conv = torchvision.models.resnet18(weights="IMAGENET1K_V1")
for param in model_conv.parameters():
    param.requires_grad = False

num_ftrs = model_conv.fc.in_features
model_conv.fc = nn.Linear(num_ftrs, len(class_names))
model_conv = model_conv.to(device)
criterion = nn.CrossEntropyLoss()
optimizer_conv = optim.SGD(model_conv.fc.parameters(), lr=0.01, momentum=0.9)
exp_lr_scheduler = lr_scheduler.StepLR(optimizer_conv, step_size=7, gamma=0.1)
model_conv = train_model(model_conv, criterion, optimizer_conv, exp_lr_scheduler, num_epochs=args.num_epochs)
visualize_model(model_conv)

# 2. Fine-tuning the whole ConvNet: a new head, a larger learning rate for it than for the pretrained part.
model_ft = models.resnet18(weights="IMAGENET1K_V1")
num_ftrs = model_ft.fc.in_features
model_ft.fc = nn.Linear(num_ftrs, len(class_names))

model_ft = model_ft.to(device)
criterion = nn.CrossEntropyLoss()
params = [
    {"params": [p for name, p in model_ft.named_parameters() if "fc" in name], "lr": 1e-2},
    {"params": [p for name, p in model_ft.named_parameters() if "fc" not in name], "lr": 1e-3},
]
optimizer_ft = optim.SGD(params, momentum=0.9)
exp_lr_scheduler = lr_scheduler.StepLR(optimizer_ft, step_size=7, gamma=0.1)
model_ft = train_model(model_ft, criterion, optimizer_ft, exp_lr_scheduler, num_epochs=args.num_epochs)
visualize_model(model_ft)

plt.ioff()
plt.show()
