"""scn: an inference engine for 3D sparse-convolution networks (spconv / NVIDIA SCN ONNX files).

    import scn
    engine = scn.Engine("centerpoint.onnx", device="cuda", precision="fp16")
    bev = engine(features, indices, grid=(41, 1440, 1440))[0]      # torch tensor on the GPU

Modules: ``scn.torch`` (SparseBackbone: swap a spconv backbone for the engine), ``scn.export`` (the spconv
tracing exporter and the float64 PyTorch reference), ``scn.bench`` (``python -m scn.bench``).
"""

import os as _os
import sys as _sys

# libscn parses ONNX with the system's libprotobuf. PyTorch's pip wheels export protobuf symbols of
# their own (another version) into the global scope, and libscn's references resolved to them:
# Engine() crashed in the parser, or the process aborted at exit, depending on the import order.
# RTLD_DEEPBIND makes the extension, libscn and their libprotobuf resolve within themselves first.
_flags = _sys.getdlopenflags()
if hasattr(_os, "RTLD_DEEPBIND"):
    _sys.setdlopenflags(_flags | _os.RTLD_DEEPBIND)
try:
    from scn._scn import Error, cuda_available
finally:
    _sys.setdlopenflags(_flags)
from scn._engine import Engine, Outputs

__all__ = ["Engine", "Error", "Outputs", "cuda_available"]
__version__ = "0.1.0"
