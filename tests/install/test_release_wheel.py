"""The wheel is the release: ``python -m build`` makes the sdist from the tree's files (as a
tagged checkout has them) and the wheel from that sdist, and the wheel holds exactly the
package's files, the console's static files and the vision models among them, with the
repository's systemd/ folder (unit files, broker files, examples) inside it as
``controller/systemd``, where ``livetable files`` finds it. Its metadata names the
dependencies pyproject.toml names.

Installed alone into a fresh venv, run from a folder outside the repository, the wheel is
livetable: ``--version``, a demo round, the console's page and script, the vision model,
and the shipped files, with no module read from the source tree. The fresh venv is given
this venv's third-party packages by a plain path line in a .pth file (which adds the folder
to ``sys.path`` without running the editable install's own .pth in it) and the wheel is
installed with ``--no-deps``: quick, and offline; the dependencies the wheel declares are
pyproject's (checked above).
"""

from __future__ import annotations

import email.parser
import json
import re
import signal
import subprocess
import sysconfig
import tarfile
import tomllib
import urllib.request
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from tests.support.broker import BrokerProcess, free_port, start_broker
from tests.support.console import ConsoleHttp
from tests.support.release import (
    PACKAGES,
    REPO_ROOT,
    STEP_TIMEOUT_S,
    Installed,
    Release,
    install_alone,
    tree_files,
)
from tests.support.wait import wait_until

# The repository's folders that ship inside the package, and where (setup.py maps them).
SHIPPED_FOLDER = "systemd"
SHIPPED_IN_WHEEL = "controller/systemd"
SHIPPED_DOCS = "docs"
DOCS_IN_WHEEL = "controller/docs"
# The demo's fast people (as tests/test_demo.py gives them).
FAST = ["--pace-s", "0.01", "--betting-s", "0.3", "--decision-s", "60", "--dealer-idle-s", "60"]
CARD_PICTURE = REPO_ROOT / "tests" / "fixtures" / "camera" / "AC-scene430-table4-banker.card2.png"


def wheel_files(wheel: Path) -> set[str]:
    """The wheel's files, but its own metadata (``*.dist-info``)."""
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    return {name for name in names if not name.split("/", 1)[0].endswith(".dist-info")}


def wheel_metadata(wheel: Path) -> email.message.Message:
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        return email.parser.Parser().parsestr(archive.read(name).decode())


def test_the_wheel_holds_the_package_and_the_shipped_folder_and_nothing_else(
    release: Release,
) -> None:
    expected = {name for name in release.source_files if name.split("/", 1)[0] in PACKAGES}
    for folder, in_wheel in ((SHIPPED_FOLDER, SHIPPED_IN_WHEEL), (SHIPPED_DOCS, DOCS_IN_WHEEL)):
        expected |= {
            f"{in_wheel}/{name.split('/', 1)[1]}"
            for name in release.source_files
            if name.startswith(f"{folder}/")
        }
    held = wheel_files(release.wheel)
    assert sorted(expected - held) == [], "files the package needs that the wheel lacks"
    assert sorted(held - expected) == [], "files in the wheel that the tree does not ship"
    # What the installed package reads at run time, by name, among them.
    for needed in (
        "controller/console/static/index.html",
        "controller/console/static/console.js",
        "controller/console/static/favicon.svg",
        "controller/console/static/dealer.html",
        "controller/console/static/i18n/en.json",
        "controller/console/static/i18n/es.json",
        "vision/models/generic.onnx",
        "vision/models/generic.json",
        f"{SHIPPED_IN_WHEEL}/livetable@.service",
        f"{SHIPPED_IN_WHEEL}/livetable@.service.d/camera.conf",
        f"{SHIPPED_IN_WHEEL}/sysusers.d/livetable.conf",
        f"{SHIPPED_IN_WHEEL}/mosquitto/livetable.conf",
        f"{SHIPPED_IN_WHEEL}/examples/console/console.toml",
        f"{DOCS_IN_WHEEL}/install.md",
    ):
        assert needed in held, needed


def test_the_sdist_holds_what_the_wheel_is_built_from(release: Release) -> None:
    with tarfile.open(release.sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    shipped = [name for name in release.source_files if name.startswith(f"{SHIPPED_FOLDER}/")]
    assert shipped and set(shipped) <= names, sorted(set(shipped) - names)
    assert {"pyproject.toml", "setup.py", "README.md"} <= names


def test_the_wheel_names_pyprojects_version_and_dependencies(release: Release) -> None:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    metadata = wheel_metadata(release.wheel)
    assert metadata["Name"] == project["name"] and metadata["Version"] == project["version"]
    assert release.wheel.name == f"{project['name']}-{project['version']}-py3-none-any.whl"
    required = [Requirement(line) for line in metadata.get_all("Requires-Dist") or []]

    def named(requirements: list[Requirement]) -> set[str]:
        return {f"{r.name}{sorted(r.extras)}{r.specifier}" for r in requirements}

    def under(extra: str | None) -> list[Requirement]:
        return [
            r
            for r in required
            if (r.marker is None) == (extra is None)
            and (extra is None or r.marker.evaluate({"extra": extra}))  # type: ignore[union-attr]
        ]

    expected = [Requirement(line) for line in project["dependencies"]]
    assert named(under(None)) == named(expected)
    for extra, lines in project["optional-dependencies"].items():
        assert named(under(extra)) == named([Requirement(line) for line in lines]), extra
    assert set(metadata.get_all("Provides-Extra") or []) == set(project["optional-dependencies"])


def test_files_names_the_checkouts_folder_and_lists_every_file_in_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from controller.tools.cli import main

    assert main(["files"]) == 0
    assert capsys.readouterr().out == f"{REPO_ROOT / SHIPPED_FOLDER}\n"
    assert main(["files", "--list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    shipped = [name for name in tree_files() if name.startswith(f"{SHIPPED_FOLDER}/")]
    assert listed == sorted(str(REPO_ROOT / name) for name in shipped)


# -- the wheel alone, in a fresh venv ---------------------------------------------------------

# Run by the fresh venv's Python: where every livetable package and the files they read
# come from, and the folders it searches for modules.
WHERE_FROM = """
import json, sys
import controller, drivers, simulators, vision
import controller.console.server as console
import vision.model as model
from vision.model import CornerClassifier

classifier = CornerClassifier()
print(json.dumps({
    "path": sys.path,
    "packages": [m.__file__ for m in (controller, drivers, simulators, vision, console, model)],
    "static": str(console.STATIC_DIR),
    "model": str(classifier.path),
    "threshold": classifier.threshold,
}))
"""


def test_the_wheel_alone_in_a_fresh_venv_is_livetable(release: Release, tmp_path: Path) -> None:
    installed = install_alone(release.wheel, tmp_path)
    assert not installed.cwd.resolve().is_relative_to(REPO_ROOT)
    version = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert installed.livetable("--version").splitlines()[0] == f"livetable {version}"

    # Every livetable module, and the console's files and the model, from the installed
    # package; the tree is nowhere on the path (this venv's site-packages holds none of it).
    python = str(installed.venv / "bin" / "python")
    where = json.loads(installed.run(python, "-c", WHERE_FROM).stdout)
    site = installed.site_packages.resolve()
    for name in [*where["packages"], where["static"], where["model"]]:
        assert Path(name).resolve().is_relative_to(site), name
    third_party = Path(sysconfig.get_paths()["purelib"]).resolve()
    searched = [Path(entry or installed.cwd).resolve() for entry in where["path"]]
    in_tree = [p for p in searched if p.is_relative_to(REPO_ROOT) and p != third_party]
    assert in_tree == [], where["path"]
    shipped_settings = json.loads((REPO_ROOT / "vision" / "models" / "generic.json").read_text())
    assert where["threshold"] == float(shipped_settings["threshold"])

    # The shipped files, where livetable files says, as the repository has them.
    folder = Path(installed.livetable("files").strip())
    assert folder == installed.site_packages / SHIPPED_IN_WHEEL, folder
    listed = installed.livetable("files", "--list").splitlines()
    shipped = [n for n in release.source_files if n.startswith(f"{SHIPPED_FOLDER}/")]
    assert listed == sorted(str(folder / n.split("/", 1)[1]) for n in shipped)
    for name in shipped:
        copied = folder / name.split("/", 1)[1]
        assert copied.read_bytes() == (REPO_ROOT / name).read_bytes(), name
    # The reference pages, where livetable files --docs says: every page the units'
    # Documentation= names among them (docs/install.md links /opt/livetable/docs to it).
    docs = Path(installed.livetable("files", "--docs").strip())
    assert docs == installed.site_packages / DOCS_IN_WHEEL, docs
    pages = [n for n in release.source_files if n.startswith(f"{SHIPPED_DOCS}/")]
    for name in pages:
        assert (docs / name.split("/", 1)[1]).read_bytes() == (REPO_ROOT / name).read_bytes()
    for unit in [n for n in shipped if n.endswith(".service")]:
        for page in re.findall(
            r"^Documentation=.*?file:/opt/livetable/docs/(\S+)",
            (REPO_ROOT / unit).read_text(),
            re.MULTILINE,
        ):
            assert (docs / page).is_file(), (unit, page)

    # The vision model reads a card picture (it abstains on this design without an
    # enrolled deck, but names its best guess at the shipped threshold).
    (answer,) = installed.livetable("vision", "classify", "--json", str(CARD_PICTURE)).splitlines()
    read = json.loads(answer)
    assert read["best"] is not None and read["threshold"] == round(where["threshold"], 6), read

    # One demo round: the daemon, the simulated shoe and people, all from the wheel.
    work = installed.cwd / "demo"
    livetable = str(installed.venv / "bin" / "livetable")
    demo = installed.run(
        livetable, "demo", "--plain", "--rounds", "1", "--work-dir", str(work), *FAST
    )
    said = demo.stdout + demo.stderr
    assert "table demo: 1 round(s) settled" in said, said[-3000:]
    assert list(work.glob("demo/*.journal")), sorted(work.rglob("*"))

    # The console's page and its script, served from the installed package.
    _check_the_console(installed, folder / "examples" / "console" / "console.toml", tmp_path)


def _check_the_console(installed: Installed, example: Path, tmp_path: Path) -> None:
    """``livetable console`` on the shipped example (its broker the test's mosquitto, no TLS,
    a free port): a person signs in and gets the page, its script, style and icon."""
    broker: BrokerProcess = start_broker(tmp_path / "broker")
    port = free_port()
    config = installed.cwd / "console.toml"
    text = example.read_text().split("\n[mqtt.tls]", 1)[0]
    for key, value in (
        ("listen", f'"127.0.0.1:{port}"'),
        ("host", f'"{broker.host}"'),
        ("port", str(broker.port)),
    ):
        text, replaced = re.subn(rf"(?m)^{key} = .*$", f"{key} = {value}", text)
        assert replaced == 1, key
    config.write_text(text)
    log = tmp_path / "console.log"
    with log.open("wb") as out:
        console = subprocess.Popen(
            [str(installed.venv / "bin" / "livetable"), "console", "--config", str(config)],
            cwd=installed.cwd,
            env=installed.env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
        )
    url = f"http://127.0.0.1:{port}"
    try:

        def healthy() -> bool:
            assert console.poll() is None, log.read_text()
            try:
                with urllib.request.urlopen(f"{url}/healthz", timeout=2) as answer:
                    return bool(answer.read() == b"ok")
            except OSError:
                return False

        wait_until(healthy, STEP_TIMEOUT_S, "the installed console answering /healthz")
        browser = ConsoleHttp(url)
        assert browser.sign_in("alice", "any-password").status == 303, log.read_text()
        static = installed.site_packages / "controller" / "console" / "static"
        page = browser.get("/")
        assert page.status == 200 and page.body == (static / "index.html").read_bytes()
        assert '<script type="module" src="/static/console.js"' in page.text
        # The page's script is ES modules: every one the wheel ships is served as shipped.
        modules = sorted(path.name for path in static.glob("*.js"))
        assert "console.js" in modules and len(modules) > 1, modules
        for name in (*modules, "console.css", "favicon.svg"):
            answer = browser.get(f"/static/{name}")
            assert answer.status == 200 and answer.body == (static / name).read_bytes(), name
        console.send_signal(signal.SIGTERM)
        assert console.wait(STEP_TIMEOUT_S) == 0, log.read_text()
    finally:
        if console.poll() is None:
            console.kill()
            console.wait()
        assert broker.stop() is None, broker.log()
