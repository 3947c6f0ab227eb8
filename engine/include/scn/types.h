// scn — small shared vocabulary: backends, precisions, activations, 3-vectors.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace scn {

enum class Backend { Cpu, Cuda, Auto };
enum class Precision { Fp32, Fp16, Int8 };
enum class Activation { None, ReLU, Sigmoid, LeakyReLU };

/// Three values in the model's index order (z,y,x or x,y,z).
using Int3 = std::array<int32_t, 3>;

const char* backend_name(Backend b);
const char* precision_name(Precision p);
const char* activation_name(Activation a);
/// Parse "cpu"/"cuda"/"auto", "fp32"/"fp16"/"int8"; throw scn::Error on anything else.
Backend parse_backend(const std::string& s);
Precision parse_precision(const std::string& s);
std::string int3_string(const Int3& v, char sep = 'x');

}  // namespace scn
