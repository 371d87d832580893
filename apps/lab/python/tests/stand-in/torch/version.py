"""torch.version: CUDA's version, or None in a build without CUDA (STAND_IN_TORCH_CUDA=0)."""

import os

cuda = None if os.environ.get("STAND_IN_TORCH_CUDA") == "0" else "12.4"
hip = None
