"""scn: an inference engine for 3D sparse-convolution networks (spconv / NVIDIA SCN ONNX files).

    import scn
    engine = scn.Engine("centerpoint.onnx", device="cuda", precision="fp16")
    bev = engine(features, indices, grid=(41, 1440, 1440))[0]      # torch tensor on the GPU

Modules: ``scn.torch`` (SparseBackbone: swap a spconv backbone for the engine), ``scn.export`` (the spconv
tracing exporter and the float64 PyTorch reference), ``scn.bench`` (``python -m scn.bench``).
"""

import importlib.util as _importlib_util

# PyTorch, when installed, is loaded before the extension: with the pip wheels of PyTorch 2.11 on the
# GPU machine, loading libscn (and the system's libprotobuf it links) first made the process abort
# ("free(): invalid pointer") once torch was imported after it; torch first works
# (docs/benchmarks.md, session 8). Every tensor-facing path uses torch anyway.
if _importlib_util.find_spec("torch") is not None:
    import torch as _torch  # noqa: F401

from scn._scn import Error, cuda_available  # noqa: E402
from scn._engine import Engine, Outputs  # noqa: E402

__all__ = ["Engine", "Error", "Outputs", "cuda_available"]
__version__ = "0.1.0"
