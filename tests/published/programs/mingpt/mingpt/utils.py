"""minGPT's helpers (after karpathy/minGPT mingpt/utils.py, commit 37baab7, MIT; written again for the
doctor's corpus): seeding, the work folder's bookkeeping, and CfgNode, a nested configuration that
``--a.b=value`` arguments override."""

import json
import os
import random
import sys
from ast import literal_eval

import numpy as np
import torch


def set_seed(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def setup_logging(config):
    work_dir = config.system.work_dir
    os.makedirs(work_dir, exist_ok=True)
    with open(os.path.join(work_dir, "args.txt"), "w") as f:
        f.write(" ".join(sys.argv))
    with open(os.path.join(work_dir, "config.json"), "w") as f:
        f.write(json.dumps(config.to_dict(), indent=4))


class CfgNode:
    """Attributes, some of them CfgNodes in turn."""

    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)

    def __str__(self):
        return json.dumps(self.to_dict(), indent=2)

    def to_dict(self):
        return {k: v.to_dict() if isinstance(v, CfgNode) else v for k, v in self.__dict__.items()}

    def merge_from_args(self, args):
        """``--trainer.batch_size=4``: the value read as a Python literal where it reads as one."""
        for arg in args:
            key, val = arg.split("=", 1)
            assert key.startswith("--"), f"expected --key=value, not {arg}"
            try:
                val = literal_eval(val)
            except (ValueError, SyntaxError):
                pass
            *path, leaf = key[2:].split(".")
            node = self
            for part in path:
                node = getattr(node, part)
            assert hasattr(node, leaf), f"{key} is not an attribute that exists in the config"
            print(f"command line overwriting config attribute {key[2:]} with {val}")
            setattr(node, leaf, val)
