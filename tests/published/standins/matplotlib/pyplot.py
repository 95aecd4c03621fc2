"""Every pyplot call accepted and nothing drawn: each name is a callable that returns an object which
absorbs attribute reads and calls in turn (figures, axes, lines)."""


class _Nothing:
    def __call__(self, *args, **kwargs):
        return self

    def __getattr__(self, name):
        return self

    def __iter__(self):
        return iter(())


_NOTHING = _Nothing()


def subplots(*args, **kwargs):
    """A figure and its axes, as ``fig, ax = plt.subplots()`` unpacks them."""
    return _NOTHING, _NOTHING


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return _NOTHING
