// The fp16 conversion moved to the public header scn/half.h; this include stays for the engine's
// own sources.
#pragma once

#include "scn/half.h"
