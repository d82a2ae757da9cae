"""``livetable vision``: classify images, evaluate on a labelled folder, enrol a deck, and
synthesise test images.

OpenCV and the model are imported inside the commands, never at module level, so building
the CLI parser (``livetable rules ...``) does not load them.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from controller.kernel.cli_support import (
    add_json,
    default_to_help,
    examples,
    non_negative_int,
    positive_int,
    unit_interval_open,
)
from controller.kernel.errors import ConfigurationError


def register(subparsers: argparse._SubParsersAction) -> None:
    vision = subparsers.add_parser(
        "vision",
        help="card recognition from camera images",
        description="Recognise cards in images; abstain rather than guess.",
        epilog=examples(
            "livetable vision classify --deck studio-deck.npz card.png",
            "livetable vision enrol pictures/ -o studio-deck.npz",
        ),
    )
    commands = vision.add_subparsers(dest="vision_command", metavar="WHAT")
    default_to_help(vision)

    def model_options(parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--deck",
            type=Path,
            help="the studio's enrolled deck file (from livetable vision enrol or livetable "
            "camera enrol); without it the shipped model reads only the designs it knows",
        )
        parser.add_argument(
            "--model", type=Path, help="another exported model (default: the shipped one)"
        )
        parser.add_argument(
            "--threshold",
            type=unit_interval_open,
            help="override the calibrated abstention threshold (between 0 and 1)",
        )

    classify = commands.add_parser(
        "classify",
        help="print the card in each image",
        description="Print the card in each image, or why the recogniser abstained: its best "
        "face, that face's confidence and the threshold it had to reach (the enrolled deck's, "
        "the model's calibration, or --threshold). --json gives per image: file, card (null "
        "when abstaining), confidence, threshold, reason and best.",
        epilog=examples(
            "livetable vision classify --deck studio-deck.npz card1.png card2.png",
            "livetable vision classify --json crops/*.png",
        ),
    )
    classify.add_argument("images", nargs="+", type=Path, metavar="IMAGE")
    add_json(classify)
    model_options(classify)
    classify.set_defaults(func=run_classify)

    evaluate = commands.add_parser(
        "eval",
        help="measure accuracy on a folder of <CARD>_<anything>.png",
        description="Accuracy, abstention rate, wrong answers and ms per image on a labelled "
        "folder (files named like QH_0007.png).",
        epilog=examples("livetable vision eval --deck studio-deck.npz labelled/"),
    )
    evaluate.add_argument("directory", type=Path, metavar="DIR")
    add_json(evaluate)
    evaluate.add_argument("--limit", type=positive_int, help="only the first N images")
    model_options(evaluate)
    evaluate.set_defaults(func=run_eval)

    enrol = commands.add_parser(
        "enrol",
        help="adapt the recogniser to the studio's deck",
        description="Fit a deck-specific head from labelled pictures of the studio's cards "
        "(a folder of <CARD>_<anything>.png, every face at least once, a few of each is "
        "better) and save it for --deck.",
        epilog=examples('livetable vision enrol pictures/ -o studio-deck.npz --name "brand, 2027"'),
    )
    enrol.add_argument("directory", type=Path, metavar="DIR")
    enrol.add_argument("-o", "--output", type=Path, required=True, help="deck file to write")
    enrol.add_argument("--name", default="", help="a name for the deck, kept in the file")
    enrol.add_argument(
        "--model", type=Path, help="another exported model (default: the shipped one)"
    )
    enrol.add_argument(
        "--threshold",
        type=unit_interval_open,
        help="abstention threshold stored in the deck (default: calibrated from the pictures)",
    )
    enrol.set_defaults(func=run_enrol)

    synth = commands.add_parser(
        "synth",
        help="write synthetic images of one design for eval/enrol",
        description="Render COUNT images of DESIGN on a table (any rotation, perspective, "
        "light, blur, glare, noise, partial cover) as DIR/<CARD>_<n>.png.",
        epilog=examples(
            "livetable vision synth --list", "livetable vision synth kde-standard out/"
        ),
    )
    synth.add_argument("design", help="an installed card design (see --list)", nargs="?")
    synth.add_argument("directory", type=Path, metavar="DIR", nargs="?")
    synth.add_argument(
        "--count", type=positive_int, default=520, help="images to write (default 520)"
    )
    synth.add_argument("--seed", type=non_negative_int, default=1, help="random seed (default 1)")
    synth.add_argument("--list", action="store_true", help="list the installed designs")
    synth.set_defaults(func=run_synth)


def _recogniser(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from vision.deck import EnrolledDeck
    from vision.model import DEFAULT_MODEL
    from vision.recognise import Recogniser

    deck = EnrolledDeck.load(args.deck) if getattr(args, "deck", None) else None
    if deck is not None and (warning := deck.stale_warning()):
        print(f"warning: {args.deck}: {warning}", file=sys.stderr)
    return Recogniser(args.model or DEFAULT_MODEL, deck=deck, threshold=args.threshold)


def _threshold_source(args: argparse.Namespace) -> str:
    if args.threshold is not None:
        return "given with --threshold"
    if args.deck is not None:
        return "the enrolled deck's"
    return "the shipped model's calibration"


NO_DECK_NOTE = (
    "note: no enrolled deck was given (--deck): the shipped model alone abstains on card "
    "designs it was not trained on; enrol the studio's deck (livetable camera enrol, or "
    "livetable vision enrol) and pass it with --deck for reliable reading"
)


def run_classify(args: argparse.Namespace) -> int:
    from vision.enrol import read_image

    missing = [str(path) for path in args.images if not path.is_file()]
    if missing:
        raise ConfigurationError(f"no such image file: {', '.join(missing)}")
    recogniser = _recogniser(args)
    threshold = float(recogniser.threshold)
    source = _threshold_source(args)
    abstained = 0
    for path in args.images:
        result = recogniser.recognise(read_image(path))
        answer = {
            "file": str(path),
            "card": str(result.card) if result.card is not None else None,
            "confidence": round(result.confidence, 4),
            "threshold": round(threshold, 6),
            "reason": result.reason,
            "best": str(result.best) if result.best is not None else None,
        }
        abstained += result.card is None
        if args.json:
            print(json.dumps(answer), flush=True)
        elif result.card is not None:
            print(f"{path}: {result.card} {result.confidence:.4f}", flush=True)
        else:
            best = f"best {result.best} at {result.confidence:.4f}" if result.best else "no face"
            print(
                f"{path}: -- abstained: {result.reason} ({best}; threshold {threshold:.4f}, "
                f"{source})",
                flush=True,
            )
    if not args.json:
        print(f"threshold applied: {threshold:.6f} ({source})")
    if abstained and args.deck is None:
        print(NO_DECK_NOTE, file=sys.stderr)
    return 0


def run_eval(args: argparse.Namespace) -> int:
    from vision.enrol import labelled_images, read_image
    from vision.evaluate import evaluate

    recogniser = _recogniser(args)
    images = labelled_images(args.directory)
    if args.limit is not None:
        images = images[: args.limit]
    examples = ((item.path.name, item.card, read_image(item.path)) for item in images)
    report = evaluate(recogniser, examples)
    if args.json:
        print(json.dumps({"directory": str(args.directory), **report.as_dict()}))
        return 0
    print(
        f"{args.directory}: {report.total} images, "
        f"correct {report.correct} ({report.accuracy:.2%}), "
        f"abstained {report.abstained} ({report.abstention_rate:.2%}), "
        f"wrong {report.wrong}; "
        f"ms per image p50 {report.percentile_ms(50):.1f}, p99 {report.percentile_ms(99):.1f}"
    )
    for name, truth, answer, confidence in report.wrong_answers:
        print(f"  WRONG {name}: {truth} read as {answer} ({confidence:.4f})")
    return 0


def run_enrol(args: argparse.Namespace) -> int:
    from controller.kernel.progress import tracked
    from vision.enrol import enrol, labelled_images, read_image
    from vision.model import DEFAULT_MODEL, CornerClassifier

    classifier = CornerClassifier(args.model or DEFAULT_MODEL)
    images = labelled_images(args.directory)
    deck = enrol(
        classifier,
        (
            (item.card, read_image(item.path))
            for item in tracked(images, len(images), "reading the pictures")
        ),
        name=args.name or args.directory.name,
        threshold=args.threshold,
    )
    deck.save(args.output)
    print(
        f"enrolled {len(images)} images ({deck.info['index_samples']} index corners) "
        f"into {args.output}"
    )
    print(f"threshold {deck.threshold:.6f}; {deck.calibration_summary()}")
    suspects = deck.info.get("calibration_suspect_labels") or []
    if suspects:
        print(
            f"warning: {len(suspects)} picture(s) read surely as another card (the deck's "
            f"threshold, {deck.threshold:.6f}, rose to stay safe): look at each; one that "
            "is mislabelled (a card not swapped before its picture, a misnamed file), "
            "retake, then enrol again; one that is right shows two cards of this design "
            "the network tells apart poorly, and the deck will abstain on many cards"
        )
        for line in suspects:  # type: ignore[attr-defined]
            print(f"  {line}")
    return 0


def run_synth(args: argparse.Namespace) -> int:
    from vision.artwork import list_designs
    from vision.synth import write_dataset

    if args.list:
        for design in list_designs():
            print(design)
        return 0
    if args.design is None or args.directory is None:
        raise ConfigurationError("vision synth needs DESIGN and DIR (or --list)")
    if args.count < 1:
        raise ConfigurationError("--count must be at least 1")
    paths = write_dataset(args.directory, args.design, args.count, args.seed)
    print(f"wrote {len(paths)} images of {args.design} to {args.directory}")
    return 0
