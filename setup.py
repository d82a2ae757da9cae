"""What pyproject.toml cannot say: the repository's systemd/ folder ships inside the package.

The unit files, the broker's configuration and the example settings live at the top of the
repository (systemd/), where the docs and the tests name them; a release wheel holds them in
``controller/systemd`` (``livetable files`` prints that folder). MANIFEST.in puts the folder
in the sdist the wheel is built from. Every other setting is in pyproject.toml.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

SHIPPED_FOLDER = "systemd"
IN_PACKAGE = Path("controller") / "systemd"


class BuildWithShippedFiles(build_py):
    """The packages, then the shipped folder copied into controller/systemd."""

    def run(self) -> None:
        super().run()
        # Not for an editable install: it runs the checkout, whose systemd/ livetable files
        # finds in place, and stays a plain path in a .pth file (a mapped folder would make
        # setuptools install an import hook instead, with a warning).
        if not self.editable_mode:
            self.copy_tree(SHIPPED_FOLDER, str(Path(self.build_lib) / IN_PACKAGE))


setup(cmdclass={"build_py": BuildWithShippedFiles})
