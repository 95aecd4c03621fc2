"""Data stand-ins, written into a corpus run's folder before the program starts: synthetic files with the
shapes and formats the published programs read (tokens, text, sine waves, images, pretrained weights),
small enough to train on in milliseconds. Nothing is downloaded."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import torch


def token_files(folder: Path, dataset: str = "shakespeare_char", vocab: int = 32, length: int = 2000) -> None:
    """nanoGPT's ``data/<dataset>/{train,val}.bin`` (uint16 tokens) and ``meta.pkl`` (its vocabulary size)."""
    where = folder / "data" / dataset
    where.mkdir(parents=True, exist_ok=True)
    generator = np.random.default_rng(0)
    for split in ("train", "val"):
        generator.integers(0, vocab, size=length, dtype=np.uint16).tofile(where / f"{split}.bin")
    chars = [chr(ord("a") + i % 26) + str(i // 26) for i in range(vocab)]
    with open(where / "meta.pkl", "wb") as f:
        pickle.dump(
            {"vocab_size": vocab, "itos": dict(enumerate(chars)), "stoi": {c: i for i, c in enumerate(chars)}}, f
        )


def word_corpus(folder: Path, words: int = 24, lines=(60, 24, 24)) -> None:
    """The word language model's ``data/wikitext-2/{train,valid,test}.txt``: lines of words drawn from a
    small vocabulary (each file holds every word, so the dictionary is the same whatever the order)."""
    where = folder / "data" / "wikitext-2"
    where.mkdir(parents=True, exist_ok=True)
    vocabulary = [f"w{i}" for i in range(words)]
    generator = np.random.default_rng(1)
    for name, count in zip(("train", "valid", "test"), lines):
        rows = [" ".join(vocabulary)]
        rows += [" ".join(generator.choice(vocabulary, size=6)) for _ in range(count - 1)]
        (where / f"{name}.txt").write_text("\n".join(rows) + "\n", encoding="utf-8")


def sine_waves(folder: Path, waves: int = 6, length: int = 24) -> None:
    """``traindata.pt`` as the time-sequence example's generate_sine_wave.py writes it (a float64 numpy
    array of shifted sine waves, saved with torch.save), with fewer and shorter waves."""
    generator = np.random.RandomState(2)
    x = np.empty((waves, length), "int64")
    x[:] = np.array(range(length)) + generator.randint(-80, 80, waves).reshape(waves, 1)
    torch.save(np.sin(x / 1.0 / 20).astype("float64"), str(folder / "traindata.pt"))


def style_images(folder: Path, size: int = 32) -> None:
    """The style-transfer tutorial's two images (``data/images/neural-style/``), random RGB squares."""
    from PIL import Image

    where = folder / "data" / "images" / "neural-style"
    where.mkdir(parents=True, exist_ok=True)
    generator = np.random.default_rng(3)
    for name in ("picasso.jpg", "dancing.jpg"):
        pixels = generator.integers(0, 256, size=(size, size, 3), dtype=np.uint8)
        Image.fromarray(pixels, mode="RGB").save(where / name, format="PNG")


def lenet_weights(folder: Path) -> None:
    """``data/lenet_mnist_model.pth``, the adversarial-example tutorial's pretrained LeNet: seeded random
    weights of the same shapes, its last bias leaning towards class 0 (so that the stand-in's label-0
    images are classified right and attacked)."""
    generator = torch.Generator().manual_seed(4)
    shapes = {
        "conv1.weight": (10, 1, 5, 5),
        "conv1.bias": (10,),
        "conv2.weight": (20, 10, 5, 5),
        "conv2.bias": (20,),
        "fc1.weight": (50, 320),
        "fc1.bias": (50,),
        "fc2.weight": (10, 50),
        "fc2.bias": (10,),
    }
    state = {name: torch.randn(*shape, generator=generator) * 0.1 for name, shape in shapes.items()}
    state["fc2.bias"][0] = 5.0
    (folder / "data").mkdir(exist_ok=True)
    torch.save(state, folder / "data" / "lenet_mnist_model.pth")


def hymenoptera_images(folder: Path, per_class: dict | None = None, size: int = 20) -> None:
    """The transfer-learning tutorial's ``data/hymenoptera_data/{train,val}/{ants,bees}/``: random RGB images
    (8 a class for training, 2 for validation)."""
    from PIL import Image

    per_class = per_class or {"train": 8, "val": 2}
    generator = np.random.default_rng(5)
    for split, count in per_class.items():
        for name in ("ants", "bees"):
            where = folder / "data" / "hymenoptera_data" / split / name
            where.mkdir(parents=True, exist_ok=True)
            for i in range(count):
                pixels = generator.integers(0, 256, size=(size, size + 4, 3), dtype=np.uint8)
                Image.fromarray(pixels, mode="RGB").save(where / f"{i}.png", format="PNG")
