"""A GPT that learns to add n-digit numbers, after karpathy/minGPT projects/adder/adder.py (commit 37baab7,
MIT): written again for the doctor's corpus (tests/published/README.md). As published: the data set is
generated (every sum of two n-digit numbers, the answer's digits reversed, the loss masked to them with
-1), the configuration is a CfgNode overridden by ``--a.b=value`` arguments, the mingpt package is
imported as installed (the corpus puts the program's folder on sys.path), and a callback evaluates under
no_grad every 500 batches (batch 0 included) and saves the best model."""

import os
import sys

import torch
from mingpt.model import GPT
from mingpt.trainer import Trainer
from mingpt.utils import CfgNode as CN
from mingpt.utils import set_seed, setup_logging
from torch.utils.data import Dataset
from torch.utils.data.dataloader import DataLoader


def get_config():
    C = CN()
    C.system = CN(seed=3407, work_dir="./out/adder")
    C.data = AdditionDataset.get_default_config()
    C.model = GPT.get_default_config()
    C.model.model_type = "gpt-nano"
    C.trainer = Trainer.get_default_config()
    C.trainer.learning_rate = 5e-4
    return C


class AdditionDataset(Dataset):
    """a + b = c as the digits of a, of b, and of c reversed; only c's digits are trained on."""

    @staticmethod
    def get_default_config():
        return CN(ndigit=2)

    def __init__(self, config, split):
        self.config = config
        ndigit = config.ndigit
        assert ndigit <= 3
        num = (10**ndigit) ** 2
        rng = torch.Generator()
        rng.manual_seed(1337)
        perm = torch.randperm(num, generator=rng)
        num_test = min(int(num * 0.2), 500)
        self.ixes = perm[:num_test] if split == "test" else perm[num_test:]

    def get_vocab_size(self):
        return 10

    def get_block_size(self):
        return 3 * self.config.ndigit

    def __len__(self):
        return self.ixes.nelement()

    def __getitem__(self, idx):
        ndigit = self.config.ndigit
        idx = self.ixes[idx].item()
        a, b = divmod(idx, 10**ndigit)
        render = f"{a:0{ndigit}d}{b:0{ndigit}d}" + f"{a + b:0{ndigit + 1}d}"[::-1]
        dix = [int(s) for s in render]
        x = torch.tensor(dix[:-1], dtype=torch.long)
        y = torch.tensor(dix[1:], dtype=torch.long)
        y[: ndigit * 2 - 1] = -1
        return x, y


if __name__ == "__main__":
    config = get_config()
    config.merge_from_args(sys.argv[1:])
    print(config)
    setup_logging(config)
    set_seed(config.system.seed)

    train_dataset = AdditionDataset(config.data, split="train")
    test_dataset = AdditionDataset(config.data, split="test")
    config.model.vocab_size = train_dataset.get_vocab_size()
    config.model.block_size = train_dataset.get_block_size()
    model = GPT(config.model)
    trainer = Trainer(config.trainer, model, train_dataset)

    def eval_split(trainer, split, max_batches=None):
        dataset = {"train": train_dataset, "test": test_dataset}[split]
        ndigit = config.data.ndigit
        results = []
        factors = torch.tensor([[10**i for i in range(ndigit + 1)][::-1]]).to(trainer.device)
        loader = DataLoader(dataset, batch_size=100, num_workers=0, drop_last=False)
        for b, (x, _y) in enumerate(loader):
            x = x.to(trainer.device)
            d1d2 = x[:, : ndigit * 2]
            d3 = model.generate(d1d2, ndigit + 1, do_sample=False)[:, -(ndigit + 1) :].flip(1)
            d1i = (d1d2[:, :ndigit] * factors[:, 1:]).sum(1)
            d2i = (d1d2[:, ndigit : ndigit * 2] * factors[:, 1:]).sum(1)
            correct = ((d3 * factors).sum(1) == d1i + d2i).cpu()
            results.extend(int(c) for c in correct)
            if max_batches is not None and b + 1 >= max_batches:
                break
        rt = torch.tensor(results, dtype=torch.float)
        print(f"{split} final score: {rt.sum():.0f}/{len(results)} = {100 * rt.mean():.2f}% correct")
        return rt.sum()

    top_score = 0

    def batch_end_callback(trainer):
        global top_score
        if trainer.iter_num % 10 == 0:
            print(
                f"iter_dt {trainer.iter_dt * 1000:.2f}ms; iter {trainer.iter_num}: train loss {trainer.loss.item():.5f}"
            )
        if trainer.iter_num % 500 == 0:
            train_max_batches = {1: None, 2: None, 3: 5}[config.data.ndigit]
            model.eval()
            with torch.no_grad():
                score = eval_split(trainer, "train", train_max_batches) + eval_split(trainer, "test")
            if score > top_score:
                top_score = score
                torch.save(model.state_dict(), os.path.join(config.system.work_dir, "model.pt"))
            model.train()

    trainer.set_callback("on_batch_end", batch_end_callback)
    trainer.run()
