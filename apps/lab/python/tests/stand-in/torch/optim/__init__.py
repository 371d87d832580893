"""torch.optim: an optimizer whose step() runs the global step hooks, as PyTorch's do."""

from torch.optim.optimizer import Optimizer


class SGD(Optimizer):
    pass
