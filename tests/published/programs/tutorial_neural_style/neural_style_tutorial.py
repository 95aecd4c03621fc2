"""Neural style transfer, after pytorch/tutorials advanced_source/neural_style_tutorial.py (commit 0a7e686,
BSD-3-Clause): written again for the doctor's corpus (tests/published/README.md). As published: the
*input image* is what is optimized (LBFGS over ``[input_img.requires_grad_()]``), while the network's
weights still require grad (they get gradients nobody uses); content and style losses are modules inserted
after the convolutions that store their loss as an attribute, summed from ``0`` in the closure; in-place
ReLUs are replaced by out-of-place ones; the image is clamped through ``.data``. Data: two random images
(tests/published/data.py) and the torchvision stand-in's small VGG with random weights."""

import argparse
import copy

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
import torch.optim as optim
import torchvision.models as models
import torchvision.transforms as transforms
from PIL import Image
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--num_steps", type=int, default=300)
args = parser.parse_args()

device = torch.device("cpu")
imsize = 128  # the published size without a GPU

loader = transforms.Compose([transforms.Resize(imsize), transforms.ToTensor()])


def image_loader(image_name):
    image = loader(Image.open(image_name).convert("RGB")).unsqueeze(0)
    return image.to(device, torch.float)


style_img = image_loader("./data/images/neural-style/picasso.jpg")
content_img = image_loader("./data/images/neural-style/dancing.jpg")
assert style_img.size() == content_img.size()
unloader = transforms.ToPILImage()
plt.ion()


def imshow(tensor, title=None):
    plt.imshow(unloader(tensor.cpu().clone().squeeze(0)))
    if title is not None:
        plt.title(title)
    plt.pause(0.001)


class ContentLoss(nn.Module):
    def __init__(self, target):
        super().__init__()
        self.target = target.detach()  # a stated value, not a variable

    def forward(self, input):
        self.loss = F.mse_loss(input, self.target)
        return input


def gram_matrix(input):
    a, b, c, d = input.size()
    features = input.view(a * b, c * d)
    return torch.mm(features, features.t()).div(a * b * c * d)


class StyleLoss(nn.Module):
    def __init__(self, target_feature):
        super().__init__()
        self.target = gram_matrix(target_feature).detach()

    def forward(self, input):
        self.loss = F.mse_loss(gram_matrix(input), self.target)
        return input


cnn = models.vgg19(weights=models.VGG19_Weights.DEFAULT).features.to(device).eval()
cnn_normalization_mean = torch.tensor([0.485, 0.456, 0.406]).to(device)
cnn_normalization_std = torch.tensor([0.229, 0.224, 0.225]).to(device)


class Normalization(nn.Module):
    def __init__(self, mean, std):
        super().__init__()
        self.mean = torch.tensor(mean).view(-1, 1, 1)
        self.std = torch.tensor(std).view(-1, 1, 1)

    def forward(self, img):
        return (img - self.mean) / self.std


content_layers_default = ["conv_4"]
style_layers_default = ["conv_1", "conv_2", "conv_3", "conv_4", "conv_5"]


def get_style_model_and_losses(
    cnn, mean, std, style_img, content_img, content_layers=content_layers_default, style_layers=style_layers_default
):
    cnn = copy.deepcopy(cnn)
    model = nn.Sequential(Normalization(mean, std).to(device))
    content_losses, style_losses = [], []
    i = 0
    for layer in cnn.children():
        if isinstance(layer, nn.Conv2d):
            i += 1
            name = f"conv_{i}"
        elif isinstance(layer, nn.ReLU):
            name = f"relu_{i}"
            layer = nn.ReLU(inplace=False)  # an in-place ReLU would overwrite what the losses saved
        elif isinstance(layer, nn.MaxPool2d):
            name = f"pool_{i}"
        elif isinstance(layer, nn.BatchNorm2d):
            name = f"bn_{i}"
        else:
            raise RuntimeError(f"Unrecognized layer: {layer.__class__.__name__}")
        model.add_module(name, layer)
        if name in content_layers:
            content_loss = ContentLoss(model(content_img).detach())
            model.add_module(f"content_loss_{i}", content_loss)
            content_losses.append(content_loss)
        if name in style_layers:
            style_loss = StyleLoss(model(style_img).detach())
            model.add_module(f"style_loss_{i}", style_loss)
            style_losses.append(style_loss)
    for i in range(len(model) - 1, -1, -1):
        if isinstance(model[i], (ContentLoss, StyleLoss)):
            break
    return model[: (i + 1)], style_losses, content_losses


input_img = content_img.clone()


def get_input_optimizer(input_img):
    return optim.LBFGS([input_img.requires_grad_()])  # the input is what requires a gradient


def run_style_transfer(
    cnn, mean, std, content_img, style_img, input_img, num_steps=300, style_weight=1000000, content_weight=1
):
    model, style_losses, content_losses = get_style_model_and_losses(cnn, mean, std, style_img, content_img)
    optimizer = get_input_optimizer(input_img)
    run = [0]
    while run[0] <= num_steps:

        def closure():
            input_img.data.clamp_(0, 1)
            optimizer.zero_grad()
            model(input_img)
            style_score = 0
            content_score = 0
            for sl in style_losses:
                style_score += sl.loss
            for cl in content_losses:
                content_score += cl.loss
            style_score *= style_weight
            content_score *= content_weight
            loss = style_score + content_score
            loss.backward()
            run[0] += 1
            if run[0] % 50 == 0:
                print(f"run {run}: Style Loss : {style_score.item():4f} Content Loss: {content_score.item():4f}")
            return style_score + content_score

        optimizer.step(closure)
    input_img.data.clamp_(0, 1)
    return input_img


output = run_style_transfer(
    cnn, cnn_normalization_mean, cnn_normalization_std, content_img, style_img, input_img, num_steps=args.num_steps
)
plt.figure()
imshow(output, title="Output Image")
plt.ioff()
plt.show()
