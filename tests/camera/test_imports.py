"""Importing the daemon's modules must not load OpenCV: only a configured camera does."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT

CAMERA_FREE_MODULES = (
    "controller",
    "drivers",
    "drivers.camera",
    "drivers.camera.config",
    "drivers.camera.frames",
    "drivers.camera.capture",
    "drivers.camera.drawing",
    "drivers.camera_events",
    "controller.tools.camera_cli",
    "simulators.camera_cli",
    "simulators.camera",
    "simulators.camera.layout",
    "simulators.camera.renderer",
    "simulators.camera.simulated",
    "simulators.camera.video",
)


def _modules_loaded_by(code: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys\nprint(' '.join(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO_ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split())


@pytest.mark.parametrize("module", CAMERA_FREE_MODULES)
def test_importing_camera_modules_does_not_import_opencv(module: str) -> None:
    loaded = _modules_loaded_by(f"import {module}")
    assert module in loaded
    assert "cv2" not in loaded


def test_building_a_camera_config_does_not_import_opencv_but_starting_capture_does() -> None:
    code = (
        "from drivers.camera import CameraConfig, CameraCapture\n"
        "config = CameraConfig.from_mapping("
        "{'source': 0, 'resolution': [640, 360], 'regions': {'player1': [0, 0, 10, 10]}})\n"
        "import sys\n"
        "assert 'cv2' not in sys.modules, 'config alone loaded OpenCV'\n"
        "from drivers.camera import require_cv2\n"
        "require_cv2()\n"
    )
    assert "cv2" in _modules_loaded_by(code)


def test_building_the_whole_command_line_does_not_import_opencv() -> None:
    # Every command module is imported to build the parser, the camera's and vision's too:
    # `livetable rules ...` must start without loading OpenCV.
    loaded = _modules_loaded_by("from controller.tools.cli import build_parser\nbuild_parser()")
    assert "controller.tools.camera_cli" in loaded and "simulators.camera_cli" in loaded
    assert "cv2" not in loaded
