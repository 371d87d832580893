"""A stand-in for PyTorch in the tests of allot-lab record's bootstrap: only what the bootstrap
uses, with one simulated CUDA device, and every call the bootstrap makes written to the JSON Lines
file named by STAND_IN_TORCH_LOG.

    STAND_IN_TORCH_CUDA=0      a build without CUDA (torch.version.cuda is None)
    STAND_IN_TORCH_MEMORY=N    the device's memory in bytes (default 64 MiB): past it, allocate()
                               calls the out-of-memory observers, then raises OutOfMemoryError

The device: torch.cuda.allocate(bytes) and torch.cuda.free(address) stand for tensors made and
dropped; segments of 20 MiB (or the request rounded to 2 MiB) are carved from the bottom up.
"""

from torch import _state, _C, version, cuda, optim  # noqa: F401

__version__ = "2.6.0+stand-in"
