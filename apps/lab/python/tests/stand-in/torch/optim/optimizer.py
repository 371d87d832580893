"""torch.optim.optimizer: the global optimizer step post-hooks."""

_global_optimizer_post_hooks = {}


class _Handle:
    def __init__(self, key):
        self._key = key

    def remove(self):
        _global_optimizer_post_hooks.pop(self._key, None)


def register_optimizer_step_post_hook(hook):
    key = len(_global_optimizer_post_hooks)
    _global_optimizer_post_hooks[key] = hook
    from torch import _state

    _state.log("register_optimizer_step_post_hook")
    return _Handle(key)


class Optimizer:
    def __init__(self, params=(), lr=0.1):
        self.params = list(params)
        self.lr = lr

    def step(self, closure=None):
        for hook in _global_optimizer_post_hooks.values():
            hook(self, (), {})
