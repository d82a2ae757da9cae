"""A camera over a simulated table: the layout, the cards dealt so far, realistic pictures.

:class:`SimulatedCamera` renders what a camera above the table would see: a felt with the
game's printed layout, every card dealt so far lying at its position, and the imperfections
of a real picture — each card turned up to ±20° and shifted off its spot (so neighbouring
cards overlap), the camera's perspective, card size, blur, sensor noise, brightness and white
balance, glare from the studio lights, and the compression of a video stream. Card faces come
from real artwork (:func:`vision.artwork.render_card_bgra`, one chosen design), or from any
provider passed in.

It offers the same interface as the capture side (:class:`drivers.camera.FrameSource`), so
the daemon can run on it in-process, and it publishes the region map of its layout
(:attr:`SimulatedCamera.regions`, :meth:`SimulatedCamera.camera_config`), so a camera config
and the simulator always agree. It writes frames to image files and to a video file that
``cv2.VideoCapture`` reads back, which gives a real-pixels test of the whole capture path.

Everything is deterministic given the seed and the sequence of calls: the scene (felt,
light, glare, camera angle) comes from the seed, each card's placement from the seed and its
deal number, each frame's noise from the seed and the frame number.

The package's modules: :mod:`~simulators.camera.layout` (where each game's positions lie),
:mod:`~simulators.camera.renderer` (the pixels), :mod:`~simulators.camera.simulated` (the
camera: the cards dealt, the frames taken) and :mod:`~simulators.camera.video` (video
files). The names are re-exported here, so ``from simulators.camera import SimulatedCamera``
works. OpenCV is imported inside the functions that draw, never at module level.
"""

from __future__ import annotations

from simulators.camera.layout import CARD_ASPECT, GAMES, Spot, TableLayout, layout_for
from simulators.camera.renderer import (
    CardFaces,
    Perturbations,
    artwork_faces,
    card_back,
)
from simulators.camera.simulated import SimulatedCamera
from simulators.camera.video import VideoRecorder

__all__ = [
    "CARD_ASPECT",
    "GAMES",
    "CardFaces",
    "Perturbations",
    "SimulatedCamera",
    "Spot",
    "TableLayout",
    "VideoRecorder",
    "artwork_faces",
    "card_back",
    "layout_for",
]
