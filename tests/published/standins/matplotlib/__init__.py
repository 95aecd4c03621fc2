"""Stand-in for matplotlib: plotting that draws nothing (see ../README.md)."""


def use(backend, *args, **kwargs):
    return None


def __getattr__(name):
    from matplotlib import pyplot

    return getattr(pyplot, name)
