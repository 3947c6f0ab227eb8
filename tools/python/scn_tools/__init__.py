"""scn_tools: Python reference tooling for the scn sparse-convolution engine.

Modules
-------
tensor_io       read / write NVIDIA ``.tensor`` files (numpy based, strict).
reference       pure-PyTorch float64 oracle of spconv 2.x SubMConv3d / SparseConv3d / SparseInverseConv3d.
models          CenterPoint SpMiddleResNetFHD and BEVFusion SparseEncoder as data (layer lists) with seeded
                synthetic fp16 weights, exportable in zyx or xyz index order.
export_onnx     writes a model description in NVIDIA's SCN ONNX schema.
make_reference  CLI: ONNX model + reference dense output for one input frame.

Interpreter: /usr/bin/python3 (torch, onnx, numpy).
"""

__all__ = ["tensor_io", "reference", "models", "export_onnx"]
