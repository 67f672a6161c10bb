"""`parallel-keras demo`, the README's main job, through its console script."""

import os
import shutil
import subprocess
import sys


def test_demo_trains_saves_and_reloads_on_one_device(tmp_path):
    executable = shutil.which("parallel-keras") or os.path.join(
        os.path.dirname(sys.executable), "parallel-keras"
    )
    process = subprocess.run(
        [executable, "demo", "--epochs", "2", "--samples", "512",
         "--output_dir", str(tmp_path)],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
    )
    assert process.returncode == 0, process.stdout + process.stderr
    out = process.stdout
    assert "on 4 simulated CPU devices" in out
    assert out.count("samples/s") == 2
    assert "Reloaded on one device in a fresh process" in out and "(OK," in out
    assert (tmp_path / "demo_cnn.keras").exists()
    assert any((tmp_path / "logs").rglob("*.tfevents.*"))
