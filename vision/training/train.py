"""Train the index-corner classifier and export it to ONNX (training needs torch; running
the recogniser does not: OpenCV's dnn module runs the exported file).

    .venv/bin/pip install torch==2.13.0 onnx          # training only
    .venv/bin/python -m vision.training.make_patches --out build/patches
    .venv/bin/python -m vision.training.train --patches build/patches \\
        --out vision/models/generic.onnx [--exclude-family standard ...]

The network reads one 52 x 32 BGR patch cut at a corner candidate and answers with two
heads: the rank (13 ranks, plus class 13 "no index here") and the suit. Its 64-value
penultimate layer is exported too: enrolment fits a deck-specific head on it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Final

import numpy as np

from vision.designs import FAMILIES, family_of
from vision.locate import PATCH_HEIGHT, PATCH_WIDTH, normalise_patches

NO_INDEX = 13
EMBEDDING_SIZE = 64


# Channels of the four convolutions. "small" is the shipped network; "wide" (2.3 times its
# classification time) was trained once and not shipped (docs/vision.md, "Tried").
NETWORK_WIDTHS: Final = {"small": (16, 32, 64, 64), "wide": (32, 64, 128, 128)}


def build_network(widths: tuple[int, int, int, int] = NETWORK_WIDTHS["small"]):  # type: ignore[no-untyped-def]
    import torch
    from torch import nn

    first, second, third, fourth = widths

    class CornerNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()

            def block(inputs: int, outputs: int) -> nn.Sequential:
                return nn.Sequential(
                    nn.Conv2d(inputs, outputs, 3, padding=1, bias=False),
                    nn.BatchNorm2d(outputs),
                    nn.ReLU(inplace=True),
                )

            self.features = nn.Sequential(
                block(3, first),
                nn.MaxPool2d(2),  # 26 x 16
                block(first, second),
                nn.MaxPool2d(2),  # 13 x 8
                block(second, third),
                nn.MaxPool2d(2),  # 6 x 4
                block(third, fourth),
            )
            self.embed = nn.Sequential(
                nn.Flatten(),
                nn.Linear(fourth * 6 * 4, EMBEDDING_SIZE),
                nn.ReLU(inplace=True),
            )
            self.dropout = nn.Dropout(0.3)
            self.rank = nn.Linear(EMBEDDING_SIZE, 14)
            self.suit = nn.Linear(EMBEDDING_SIZE, 4)

        def forward(self, patch: torch.Tensor) -> tuple[torch.Tensor, ...]:
            embedding = self.embed(self.features(patch))
            hidden = self.dropout(embedding)
            return self.rank(hidden), self.suit(hidden), embedding

    return CornerNet()


def load_patches(
    directory: Path, exclude_families: set[str]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    patches, ranks, suits, used = [], [], [], []
    for path in sorted(directory.glob("*.npz")):
        design = path.stem
        family = family_of(design)
        # Procedural decks (make_patches --procedural) belong to no real design's family.
        procedural = design.startswith("procedural-")
        if not procedural and (family is None or family in exclude_families):
            continue
        data = np.load(path)
        patches.append(data["patches"])
        ranks.append(data["ranks"])
        suits.append(data["suits"])
        used.append(design)
    if not patches:
        raise SystemExit(f"no patch files for training in {directory}")
    return np.concatenate(patches), np.concatenate(ranks), np.concatenate(suits), used


def _shift(batch: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Shift patches by up to two pixels: the locator's corners are that exact."""
    shifted = np.empty_like(batch)
    for i, patch in enumerate(batch):
        dy, dx = rng.integers(-2, 3, size=2)
        shifted[i] = np.roll(patch, (int(dy), int(dx)), axis=(0, 1))
    return shifted


def _augment(batch: np.ndarray, rng: np.random.Generator, colour: bool = False) -> np.ndarray:
    """Jitter each patch as the locator and the camera would: shift by up to two pixels,
    scale by up to 12 %, turn by up to 6 degrees, blur a little, change contrast. Designs
    the network never saw differ from the training designs in just such ways."""
    import cv2

    augmented = np.empty_like(batch)
    height, width = batch.shape[1:3]
    for i, patch in enumerate(batch):
        scale = rng.uniform(0.88, 1.12)
        angle = rng.uniform(-6.0, 6.0)
        matrix = cv2.getRotationMatrix2D((width / 2, height / 2), angle, scale)
        matrix[:, 2] += rng.uniform(-2.0, 2.0, size=2)
        moved = cv2.warpAffine(
            patch, matrix, (width, height), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE
        )
        if rng.random() < 0.3:
            moved = cv2.GaussianBlur(moved, (0, 0), rng.uniform(0.4, 1.0))
        contrast = rng.uniform(0.7, 1.3)
        moved = (moved.astype(np.float32) - 128.0) * contrast + 128.0
        if colour:
            # Camera white balance and printing inks vary: tint the channels, and now and
            # then take the colour away so suits are also learned by their shape alone.
            moved *= rng.uniform(0.85, 1.15, size=3)
            if rng.random() < 0.08:
                moved[:] = moved.mean(axis=2, keepdims=True)
        augmented[i] = np.clip(moved, 0, 255).astype(np.uint8)
    return augmented


def train(
    patches: np.ndarray,
    ranks: np.ndarray,
    suits: np.ndarray,
    epochs: int,
    seed: int,
    threads: int,
    augment: str = "shift",
    network_name: str = "small",
):  # type: ignore[no-untyped-def]
    import torch
    from torch import nn

    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    rng = np.random.default_rng(seed)
    network = build_network(NETWORK_WIDTHS[network_name])
    optimiser = torch.optim.AdamW(network.parameters(), lr=3e-3, weight_decay=1e-4)
    batch_size = 256
    steps = epochs * (len(patches) // batch_size)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimiser, max_lr=3e-3, total_steps=steps)
    rank_loss = nn.CrossEntropyLoss(label_smoothing=0.02)
    suit_loss = nn.CrossEntropyLoss(ignore_index=-1, label_smoothing=0.02)
    step = 0
    for epoch in range(epochs):
        network.train()
        order = rng.permutation(len(patches))
        started = time.monotonic()
        total, correct_rank, seen = 0.0, 0, 0
        for first in range(0, len(order) - batch_size + 1, batch_size):
            chosen = order[first : first + batch_size]
            if augment == "shift":
                jittered = _shift(patches[chosen], rng)
            else:
                jittered = _augment(patches[chosen], rng, colour=augment == "colour")
            inputs = torch.from_numpy(normalise_patches(jittered))
            rank_target = torch.from_numpy(ranks[chosen].astype(np.int64))
            suit_target = torch.from_numpy(suits[chosen].astype(np.int64))
            rank_logits, suit_logits, _ = network(inputs)
            loss = rank_loss(rank_logits, rank_target) + suit_loss(suit_logits, suit_target)
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            schedule.step()
            step += 1
            total += loss.item() * len(chosen)
            correct_rank += int((rank_logits.argmax(1) == rank_target).sum())
            seen += len(chosen)
        print(
            f"epoch {epoch + 1}/{epochs}: loss {total / seen:.4f}, "
            f"rank accuracy {correct_rank / seen:.4f}, {time.monotonic() - started:.0f} s",
            flush=True,
        )
    network.eval()
    return network


def export(network, path: Path) -> None:  # type: ignore[no-untyped-def]
    import torch

    path.parent.mkdir(parents=True, exist_ok=True)
    dummy = torch.zeros(1, 3, PATCH_HEIGHT, PATCH_WIDTH)
    torch.onnx.export(
        network,
        (dummy,),
        str(path),
        input_names=["patch"],
        output_names=["rank", "suit", "embedding"],
        dynamic_axes={"patch": {0: "n"}, "rank": {0: "n"}, "suit": {0: "n"}, "embedding": {0: "n"}},
        opset_version=13,
        dynamo=False,
    )
    # The two heads again as plain arrays: enrolment fine-tunes them without torch or onnx.
    np.savez(
        path.with_suffix(".heads.npz"),
        rank_weight=network.rank.weight.detach().numpy().T.astype(np.float32),
        rank_bias=network.rank.bias.detach().numpy().astype(np.float32),
        suit_weight=network.suit.weight.detach().numpy().T.astype(np.float32),
        suit_bias=network.suit.bias.detach().numpy().astype(np.float32),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--patches", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True, help="the .onnx file to write")
    parser.add_argument("--exclude-family", action="append", default=[], choices=sorted(FAMILIES))
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--augment",
        choices=("shift", "full", "colour"),
        default="shift",
        help="shift: +-2 px; full: also scale, turn, blur, contrast; colour: also tint the "
        "channels and sometimes drop the colour",
    )
    parser.add_argument("--network", choices=sorted(NETWORK_WIDTHS), default="small")
    args = parser.parse_args(argv)
    excluded = set(args.exclude_family)
    patches, ranks, suits, designs = load_patches(args.patches, excluded)
    print(
        f"{len(patches)} patches ({int((ranks != NO_INDEX).sum())} index) "
        f"from {len(designs)} designs; excluded families: {sorted(excluded) or 'none'}",
        flush=True,
    )
    network = train(
        patches, ranks, suits, args.epochs, args.seed, args.threads, args.augment, args.network
    )
    export(network, args.out)
    meta = {
        "trained_on": designs,
        "excluded_families": sorted(excluded),
        "patches": len(patches),
        "epochs": args.epochs,
        "seed": args.seed,
        "augment": args.augment,
        "network": args.network,
    }
    args.out.with_suffix(".training.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(f"wrote {args.out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
