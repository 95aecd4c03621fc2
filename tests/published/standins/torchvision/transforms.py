"""Transforms on PIL images and on tensors (channels first), as the corpus's programs call them."""

import numpy as np
import torch
from PIL import Image


class Compose:
    def __init__(self, transforms):
        self.transforms = list(transforms)

    def __call__(self, image):
        for transform in self.transforms:
            image = transform(image)
        return image


class ToTensor:
    """A PIL image or an HxW(xC) uint8 array to a float tensor CxHxW in [0, 1]."""

    def __call__(self, image):
        array = np.asarray(image)
        tensor = torch.from_numpy(array.copy())
        tensor = tensor.unsqueeze(0) if tensor.dim() == 2 else tensor.permute(2, 0, 1)
        return tensor.contiguous().float().div(255)


class ToPILImage:
    def __call__(self, tensor):
        array = (tensor.detach().clamp(0, 1) * 255).to(torch.uint8)
        if array.shape[0] == 1:
            return Image.fromarray(array[0].numpy(), mode="L")
        return Image.fromarray(np.ascontiguousarray(array.permute(1, 2, 0).numpy()), mode="RGB")


class Normalize:
    def __init__(self, mean, std):
        self.mean, self.std = torch.tensor(mean).view(-1, 1, 1), torch.tensor(std).view(-1, 1, 1)

    def __call__(self, tensor):
        return (tensor - self.mean) / self.std


def _size(size, height, width):
    if isinstance(size, int):  # the smaller edge to `size`, keeping the aspect ratio
        if height <= width:
            return size, max(1, round(width * size / height))
        return max(1, round(height * size / width)), size
    return tuple(size)


class Resize:
    def __init__(self, size):
        self.size = size

    def __call__(self, image):
        if isinstance(image, Image.Image):
            height, width = _size(self.size, image.height, image.width)
            return image.resize((width, height), Image.BILINEAR)
        height, width = _size(self.size, image.shape[-2], image.shape[-1])
        out = torch.nn.functional.interpolate(image.unsqueeze(0), size=(height, width), mode="bilinear")
        return out.squeeze(0)


class CenterCrop:
    def __init__(self, size):
        self.size = (size, size) if isinstance(size, int) else tuple(size)

    def __call__(self, image):
        height, width = self.size
        if isinstance(image, Image.Image):
            left, top = (image.width - width) // 2, (image.height - height) // 2
            return image.crop((left, top, left + width, top + height))
        top, left = (image.shape[-2] - height) // 2, (image.shape[-1] - width) // 2
        return image[..., top : top + height, left : left + width]


class Lambda:
    def __init__(self, function):
        self.function = function

    def __call__(self, image):
        return self.function(image)


class RandomResizedCrop:
    """A random square crop of at least half the smaller edge, resized to ``size`` (torch's generator)."""

    def __init__(self, size):
        self.size = (size, size) if isinstance(size, int) else tuple(size)

    def __call__(self, image):
        edge = min(image.width, image.height)
        side = int(torch.randint(edge // 2, edge + 1, ()).item())
        left = int(torch.randint(0, image.width - side + 1, ()).item())
        top = int(torch.randint(0, image.height - side + 1, ()).item())
        crop = image.crop((left, top, left + side, top + side))
        return crop.resize((self.size[1], self.size[0]), Image.BILINEAR)


class RandomHorizontalFlip:
    def __init__(self, p=0.5):
        self.p = p

    def __call__(self, image):
        if torch.rand(()).item() < self.p:
            return image.transpose(Image.FLIP_LEFT_RIGHT)
        return image
