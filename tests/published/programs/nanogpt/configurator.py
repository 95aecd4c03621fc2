"""nanoGPT's way of reading options (after karpathy/nanoGPT configurator.py, commit 3adf61e, MIT; written
again for the doctor's corpus): train.py runs this file with exec(), and each ``--key=value`` argument
replaces the global of that name, its value read as a Python literal of the same type."""

import sys
from ast import literal_eval

for arg in sys.argv[1:]:
    assert arg.startswith("--") and "=" in arg, f"expected --key=value, not {arg}"
    key, val = arg[2:].split("=", 1)
    if key not in globals():
        raise ValueError(f"Unknown config key: {key}")
    try:
        attempt = literal_eval(val)
    except (SyntaxError, ValueError):
        attempt = val
    assert type(attempt) is type(globals()[key]), f"{key}: {attempt!r} is not a {type(globals()[key]).__name__}"
    print(f"Overriding: {key} = {attempt}")
    globals()[key] = attempt
