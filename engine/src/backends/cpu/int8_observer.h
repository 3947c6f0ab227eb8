// A CPU-engine-only hook that shows every value a forward computes, for `scn calibrate` (activation
// statistics) and the INT8 tests (layer-by-layer checks). Not part of the public API: include it
// from engine/src (the CLI and the tests do). The observer runs on the forward's thread, once per
// node, after the node's output is stored.
#pragma once

#include <cstdint>
#include <functional>

#include "scn/engine.h"

namespace scn::cpu {

struct ObservedValue {
  int node = -1;                    ///< node that produced the value (graph inputs: their Input node)
  int value = -1;                   ///< value id
  /// The value as the engine stores it, as float32: fp32 engine: float32; fp16 engine: values
  /// rounded to fp16; int8 engine: fp16 values, or the integers q in [-127, 127] of int8 storage.
  const float* data = nullptr;
  int64_t rows = 0;                 ///< sparse: active sites; dense: number of elements
  int64_t channels = 1;             ///< sparse: channels; dense: 1
  const int32_t* coords = nullptr;  ///< sparse: [rows, 4] (b, i0, i1, i2); dense: null
  bool int8 = false;                ///< int8 engine: stored as int8 (data holds q)
  float range = -1.f;               ///< int8 storage: dynamic range (scale = range / 127)
};

using ValueObserver = std::function<void(const ObservedValue&)>;

/// Installs `observer` on a CPU engine (an empty function removes it). Throws scn::Error when the
/// engine is not a CPU engine. The pointers are valid only during the call.
void set_value_observer(Engine& engine, ValueObserver observer);

}  // namespace scn::cpu
