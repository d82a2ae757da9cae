"""What the camera driver puts on the controller's queue.

The events belong to the table's vocabulary (:mod:`controller.table.events`), which owns
their journal encoding; they are re-exported here for the camera driver and its users.
``source`` is the camera source as it may be logged: a URL's password is replaced by ``***``.
"""

from __future__ import annotations

from controller.table.events import CameraEvent, CameraOffline, CameraOnline

__all__ = ["CameraEvent", "CameraOffline", "CameraOnline"]
