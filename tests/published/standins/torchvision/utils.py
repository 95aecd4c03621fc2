"""Saving images: the corpus checks training, so the stand-in writes nothing; a grid is the images side by side."""


def make_grid(tensor, nrow=8, padding=2, normalize=False, **kwargs):
    """A batch (B, C, H, W) laid side by side as one image (C, H, B * W), without padding."""
    if tensor.dim() == 3:
        return tensor
    return tensor.permute(1, 2, 0, 3).reshape(tensor.shape[1], tensor.shape[2], -1)


def save_image(tensor, fp, nrow=8, padding=2, normalize=False, **kwargs):
    return None
