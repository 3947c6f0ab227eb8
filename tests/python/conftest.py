"""pytest configuration for the scn Python reference tests (interpreter: /usr/bin/python3).

ctest sets PYTHONPATH=<repo>/tools/python; when pytest is run by hand without it, the package is found
relative to this file. The real nuScenes frame is looked up in $SCN_SHARED_DATA_DIR, else <repo>/../shared/data.
"""

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
_TOOLS = REPO / "tools" / "python"
if str(_TOOLS) not in sys.path:
    sys.path.append(str(_TOOLS))  # PYTHONPATH (ctest) takes precedence


def shared_data_dir() -> Path:
    env = os.environ.get("SCN_SHARED_DATA_DIR")
    return Path(env) if env else REPO.parent / "shared" / "data"


@pytest.fixture(scope="session")
def nuscenes_dir() -> Path:
    d = shared_data_dir() / "nuscenes-centerpoint"
    needed = ["in_features.torch.fp16.tensor", "in_indices_zyx.torch.int32.tensor",
              "in_indices_xyz.torch.int32.tensor"]
    missing = [n for n in needed if not (d / n).is_file()]
    if missing:
        pytest.skip(f"real nuScenes frame not found in {d} (missing {', '.join(missing)}); "
                    f"set SCN_SHARED_DATA_DIR or place it at <repo>/../shared/data")
    return d
