"""scn: an inference engine for 3D sparse-convolution networks (spconv / NVIDIA SCN ONNX files).

    import scn
    engine = scn.Engine("centerpoint.onnx", device="cuda", precision="fp16")
    bev = engine(features, indices, grid=(41, 1440, 1440))[0]      # torch tensor on the GPU
    vox = scn.Voxelizer("nuscenes-centerpoint", device="cuda")
    bev = engine.run_points(points, vox)[0]                         # raw points -> BEV, no host wait

Modules: ``scn.torch`` (SparseBackbone: swap a spconv backbone for the engine), ``scn.export`` (the spconv
tracing exporter and the float64 PyTorch reference), ``scn.bench`` (``python -m scn.bench``).
"""

from scn._scn import Error, cuda_available
from scn._engine import Engine, LayerTiming, Outputs, PointsTiming
from scn._voxelizer import VoxelizeStats, Voxelizer, presets as voxelizer_presets

__all__ = ["Engine", "Error", "LayerTiming", "Outputs", "PointsTiming", "VoxelizeStats", "Voxelizer",
           "cuda_available", "voxelizer_presets"]
__version__ = "0.1.0"
