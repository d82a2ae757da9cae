"""What pyproject.toml cannot say: the repository's systemd/ and docs/ folders ship inside
the package.

The unit files, the broker's configuration and the example settings live at the top of the
repository (systemd/), where the docs and the tests name them; a release wheel holds them in
``controller/systemd`` (``livetable files`` prints that folder). The reference pages (docs/)
go to ``controller/docs`` (``livetable files --docs``), so that a table PC has the pages of
the release it runs, where its units' ``Documentation=`` says. MANIFEST.in puts both folders
in the sdist the wheel is built from. Every other setting is in pyproject.toml.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

# Each shipped folder of the repository, and where the wheel holds it.
SHIPPED_FOLDERS = {"systemd": Path("controller") / "systemd", "docs": Path("controller") / "docs"}


class BuildWithShippedFiles(build_py):
    """The packages, then the shipped folders copied into the package."""

    def run(self) -> None:
        super().run()
        # Not for an editable install: it runs the checkout, whose systemd/ livetable files
        # finds in place, and stays a plain path in a .pth file (a mapped folder would make
        # setuptools install an import hook instead, with a warning).
        if not self.editable_mode:
            for folder, in_package in SHIPPED_FOLDERS.items():
                self.copy_tree(folder, str(Path(self.build_lib) / in_package))


setup(cmdclass={"build_py": BuildWithShippedFiles})
