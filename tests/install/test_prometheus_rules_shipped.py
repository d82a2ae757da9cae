"""The shipped Prometheus files (systemd/prometheus/) as shipped: the alert rules pass their
own unit tests under Debian's promtool, the example configuration is valid, and every
livetable metric they name is one the daemon exposes."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from controller.service.metrics import CARD_SOURCES, METRIC_NAMES
from tests.support.api_schema import load_document

REPO_ROOT = Path(__file__).resolve().parents[2]
SHIPPED = REPO_ROOT / "systemd" / "prometheus"
RULES = SHIPPED / "livetable-alerts.yml"
RULE_TESTS = SHIPPED / "livetable-alerts.test.yml"
CONFIG = SHIPPED / "prometheus-livetable.yml"


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    tool = shutil.which("promtool")
    assert tool is not None, "promtool is missing: Debian's prometheus package (scripts/test)"
    return subprocess.run(
        [tool, *args], cwd=SHIPPED, capture_output=True, text=True, timeout=60, check=False
    )


@pytest.mark.parametrize(
    "args",
    [
        ("check", "rules", RULES.name),
        ("test", "rules", RULE_TESTS.name),
        ("check", "config", CONFIG.name),
    ],
    ids=["check rules", "test rules", "check config"],
)
def test_promtool_passes_the_shipped_files(args: tuple[str, ...]) -> None:
    done = promtool(*args)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_rules_name_only_metrics_the_daemon_exposes() -> None:
    named = set(re.findall(r"\blivetable_[a-z_]+", RULES.read_text()))
    exposed = set(METRIC_NAMES) | {f"{name}_{part}" for name in METRIC_NAMES for part in (
        "bucket", "count", "sum")}  # fmt: skip
    assert named and named <= exposed, named - exposed
    # The rule tests feed the same names.
    fed = set(re.findall(r"\blivetable_[a-z_]+", RULE_TESTS.read_text()))
    assert fed <= exposed, fed - exposed


def test_the_rules_use_the_shipped_job_name() -> None:
    (job,) = re.findall(r"job_name: (\S+)", CONFIG.read_text())
    assert f'up{{job="{job}"}}' in RULES.read_text()


def _doc_section() -> str:
    text = (REPO_ROOT / "docs" / "deployment.md").read_text()
    return text.split("## Metrics and alerts", 1)[1].split("\n## ", 1)[0]


def test_the_docs_list_every_metric_and_every_alert() -> None:
    section = _doc_section()
    documented = re.findall(r"^\| `(livetable_[a-z_]+)` \|", section, re.MULTILINE)
    assert documented == list(METRIC_NAMES)
    alerts = re.findall(r"^\| `(Livetable[A-Za-z]+)` \|", section, re.MULTILINE)
    assert alerts == re.findall(r"- alert: (\S+)", RULES.read_text())


def test_the_card_sources_counted_are_the_apis() -> None:
    """Each source a card_dealt may name starts at zero: the schema's enum is the list."""
    schema = load_document()["components"]["schemas"]["CardDealt"]
    assert tuple(schema["properties"]["source"]["enum"]) == CARD_SOURCES
