// usage: consumer MODEL.onnx FEATURES.tensor INDICES.tensor OUT.tensor
#include <scn/onnx.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 5) return 2;
  try {
    // Defaults: Backend::Auto (CUDA when built with it and a GPU is present, else the CPU)
    // and Precision::Fp16 (activations stored as float16, accumulation in float32).
    scn::BuildOptions options;
    std::unique_ptr<scn::Engine> engine = scn::load_engine_from_onnx(argv[1], options);
    scn::Tensor features = scn::Tensor::load(argv[2]);          // [N, 5] float16 (or float32)
    scn::Tensor indices = scn::Tensor::load(argv[3]);           // [N, 4] int32: batch, z, y, x (zyx models)
    engine->set_input(0, features, indices, {41, 1440, 1440});  // grid in the same index order
    engine->forward();  // CUDA: forward(stream) enqueues on your cudaStream_t, no host sync
    engine->check_errors();
    scn::Tensor bev = engine->output(0).to(scn::Device::Host);  // e.g. [1, 256, 180, 180]
    std::printf("%s %s\n", scn::dtype_name(bev.dtype()), bev.shape_string().c_str());
    bev.save(argv[4]);
  } catch (const scn::Error& e) {  // every bad file, node or input row, by name
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
