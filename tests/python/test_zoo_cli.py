"""zoo_export_all / zoo_check: a selection of nothing, or a model with nothing to compare, is an error."""

import json

import pytest

from scn_tools import zoo_check, zoo_export_all


def _manifest(tmp_path, models):
    (tmp_path / "manifest.json").write_text(json.dumps({"models": models}))
    return ["--scn", "/bin/true", "--dir", str(tmp_path), "--max-rel-l2", "1e-5"]


def _model(name, outputs):
    return {"name": name, "onnx": f"{name}/model.onnx", "features": f"{name}/f.tensor", "indices": f"{name}/i.tensor",
            "grid": "4x4x4", "batch": 1, "outputs": outputs}


@pytest.mark.parametrize("models", [",", " , "])
def test_zoo_check_empty_selection_is_a_usage_error(tmp_path, capsys, models):
    # "0 models ... 0 passed, 0 failed" with exit status 0 read as a passed check
    args = _manifest(tmp_path, [_model("a", [])])
    with pytest.raises(SystemExit) as e:
        zoo_check.main(args + ["--models", models])
    assert e.value.code == 2
    assert f"--models {models!r} selects no model" in capsys.readouterr().err


def test_zoo_check_empty_manifest_is_a_usage_error(tmp_path, capsys):
    args = _manifest(tmp_path, [])
    with pytest.raises(SystemExit) as e:
        zoo_check.main(args)
    assert e.value.code == 2
    assert "lists no model" in capsys.readouterr().err


def test_zoo_check_model_without_outputs_fails(tmp_path, capsys):
    # scn run (here /bin/true) succeeded and nothing was compared: that passed
    args = _manifest(tmp_path, [_model("a", [])])
    assert zoo_check.main(args) == 1
    out = capsys.readouterr().out
    assert "FAIL a: " in out and "lists no outputs" in out
    assert "0 passed, 1 failed" in out


@pytest.mark.parametrize("models", ["", ",", " "])
def test_zoo_export_all_empty_selection_is_a_usage_error(tmp_path, capsys, models):
    out = tmp_path / "zoo"
    with pytest.raises(SystemExit) as e:
        zoo_export_all.main(["--out", str(out), "--models", models])
    assert e.value.code == 2
    assert f"--models {models!r} selects no model" in capsys.readouterr().err
    assert not (out / "manifest.json").exists()
