"""Stand-in for ``gymnasium.make("CartPole-v1")`` (see ../README.md): 12-step episodes, a reward of 1 a
step, a seeded random walk for observations, and a reward threshold that ends the published loops after
three episodes; `action_space` has two actions."""

from types import SimpleNamespace

import numpy as np


class Discrete:
    """``action_space``: ``n`` actions, ``sample()`` from its own seeded generator."""

    def __init__(self, n):
        self.n = n
        self._random = np.random.RandomState(1)

    def sample(self):
        return int(self._random.randint(self.n))


class CartPole:
    episode_steps = 12

    def __init__(self, render_mode=None):
        self.render_mode = render_mode
        self.spec = SimpleNamespace(id="CartPole-v1", reward_threshold=10.2)
        self.action_space = Discrete(2)
        self._random = np.random.RandomState(0)
        self._t, self._state = 0, np.zeros(4, dtype=np.float32)

    def reset(self, seed=None, options=None):
        if seed is not None:
            self._random = np.random.RandomState(seed)
        self._t = 0
        self._state = self._random.uniform(-0.05, 0.05, size=4).astype(np.float32)
        return self._state.copy(), {}

    def step(self, action):
        self._t += 1
        self._state = (self._state + self._random.normal(0, 0.05, size=4)).astype(np.float32)
        terminated = self._t >= self.episode_steps
        return self._state.copy(), 1.0, terminated, False, {}

    def render(self):
        return None

    def close(self):
        return None


def make(env_id, render_mode=None, **kwargs):
    if env_id != "CartPole-v1":
        raise ValueError(f"the stand-in knows CartPole-v1 only, not {env_id}")
    return CartPole(render_mode=render_mode)
