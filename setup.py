"""What pyproject.toml cannot say: the repository's systemd/ folder ships inside the package.

The unit files, the broker's configuration and the example settings live at the top of the
repository (systemd/), where the docs and the tests name them; an installed release has them
as package data in ``controller/systemd`` (``livetable files`` prints that folder).
pyproject.toml's ``packages.find`` cannot map a folder to another package's name, so the
package list is made here, once; every other setting is in pyproject.toml.
"""

from setuptools import find_namespace_packages, setup

SHIPPED = "controller.systemd"

setup(
    packages=[
        *find_namespace_packages(include=["controller*", "drivers*", "vision*", "simulators*"]),
        # The shipped folder and its subfolders (examples, mosquitto, nats), named as
        # packages so setuptools takes them as meant; their files: package-data.
        SHIPPED,
        *(f"{SHIPPED}.{name}" for name in find_namespace_packages(where="systemd")),
    ],
    # The packages sit at the root; only the shipped folder is mapped.
    package_dir={"": ".", SHIPPED: "systemd"},
)
