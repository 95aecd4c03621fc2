"""Saving images: the corpus checks training, so the stand-in writes nothing."""


def make_grid(tensor, nrow=8, padding=2, normalize=False, **kwargs):
    return tensor


def save_image(tensor, fp, nrow=8, padding=2, normalize=False, **kwargs):
    return None
