"""A card-shoe simulator on a real pty, built from the production codecs."""

from simulators.shoe.simulator import Emitted, FaultPlan, ShoeSimulator

__all__ = ["Emitted", "FaultPlan", "ShoeSimulator"]
