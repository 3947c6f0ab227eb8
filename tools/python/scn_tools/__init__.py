"""scn_tools: Python reference tooling for the scn sparse-convolution engine (installed by the wheel as scn.export).

Modules
-------
tensor_io       read / write NVIDIA ``.tensor`` files (numpy based, strict).
reference       pure-PyTorch float64 oracle of spconv 2.x SubMConv3d / SparseConv3d / SparseInverseConv3d,
                Add, Concat, ReLU, ScatterDense.
graph           the graph IR (conv / add / relu / concat / scatter / transpose / reshape, several outputs,
                sparse outputs), zyx <-> xyz reordering, and the reference interpreter.
models          CenterPoint SpMiddleResNetFHD and BEVFusion SparseEncoder as data (layer lists) with seeded
                synthetic fp16 weights, exportable in zyx or xyz index order.
export_onnx     writes a graph in NVIDIA's SCN ONNX schema (+ Concat, several / sparse outputs) and reads it back.
sparse_nn       spconv 2.x module API (SparseConvTensor, SubMConv3d, SparseConv3d, SparseInverseConv3d,
                SparseSequential, JoinTable, AddTable) on the float64 reference.
spconv_export   tracing exporter: a spconv 2.x network (spconv.pytorch or sparse_nn modules) -> SCN ONNX.
spconv_tracer   its recording half: the traced tensor type, the module hooks, the recorded values and ops.
frames          deterministic synthetic LiDAR frames (nuScenes-, KITTI-, SemanticKITTI-like).
zoo             model zoo (CenterPoint, BEVFusion, OpenPCDet VoxelBackBone8x, MinkUNet) as spconv modules
                with seeded weights.
zoo_export_all  CLI: every zoo model + input frame + reference outputs into a folder (manifest.json, cases.tsv).
zoo_check       CLI: runs a zoo folder through ``scn run`` and checks every output with ``scn compare``.
make_reference  CLI: ONNX model + reference dense output for one input frame (layer-list models).

Interpreter: /usr/bin/python3 (torch, onnx, numpy).
"""

__all__ = ["tensor_io", "reference", "graph", "models", "export_onnx", "sparse_nn", "spconv_export", "frames",
           "zoo"]

# The main entry points at package level, imported on first use (tensor_io alone needs no torch / onnx).
# Installed, this package is scn.export: ``from scn.export import export_spconv``.
_ENTRY_POINTS = {"export_spconv": "spconv_export", "ExportError": "spconv_export", "export_onnx": "export_onnx",
                 "graph_from_onnx": "export_onnx", "load_tensor": "tensor_io", "save_tensor": "tensor_io"}


def __getattr__(name):
    if name in _ENTRY_POINTS:
        import importlib
        return getattr(importlib.import_module(f".{_ENTRY_POINTS[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
