"""Angel Eye's own settings: the ``[shoe.angel-eye]`` table (also read from ``[shoe]``, where
configurations have had them; see ``docs/shoe-protocol.md``, 1.6 and 1.8)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import ClassVar, Self

from drivers.shoe.options import ProtocolOptions
from drivers.shoe.protocols.angel_eye.variants import BIT7_SETTINGS, VARIANT_NAMES


@dataclass(frozen=True, slots=True)
class AngelEyeOptions(ProtocolOptions):
    protocol: ClassVar[str] = "angel-eye"
    legacy_keys: ClassVar[frozenset[str]] = frozenset(
        ("command_bcc_includes_stx", "variant", "data_bit7")
    )

    command_bcc_includes_stx: bool = True
    """Whether the host-command BCC covers STX (1.6); a NAK 02 switches it once anyway."""
    variant: str = field(default="auto", metadata={"choices": VARIANT_NAMES})
    """How the shoe numbers its frames (``auto``, ``mod10``, ``wrap9``,
    ``wrap9-free-signals``, ``mod10-free-signals``, ``any-seq``); ``auto`` finds it from the
    first frames. Fix it once ``livetable shoe monitor`` has told you which it is."""
    data_bit7: str = field(default="auto", metadata={"choices": BIT7_SETTINGS})
    """``required`` drops a frame whose data bytes have bit 7 clear, ``ignored`` masks them;
    ``auto`` reads them masked and reports them."""

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--command-bcc",
            choices=("with-stx", "without-stx"),
            default="with-stx",
            help="Angel Eye: whether host-command BCCs include STX",
        )
        parser.add_argument(
            "--variant",
            choices=VARIANT_NAMES,
            default="auto",
            help="Angel Eye: how SEQ counts (default auto: found from the first frames)",
        )
        parser.add_argument(
            "--data-bit7", choices=BIT7_SETTINGS, default="auto", help="Angel Eye: data bit 7 rule"
        )

    @classmethod
    def from_arguments(cls, args: argparse.Namespace) -> Self:
        return cls(
            command_bcc_includes_stx=args.command_bcc == "with-stx",
            variant=args.variant,
            data_bit7=args.data_bit7,
        )
