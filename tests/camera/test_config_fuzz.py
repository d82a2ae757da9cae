"""Any garbage in the ``[camera]`` table either loads or raises ConfigurationError, never
anything else (the h11 rule applied to configuration)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from controller.kernel.errors import ConfigurationError
from drivers.camera import CameraConfig

KEYS = [
    "source",
    "resolution",
    "fps",
    "fourcc",
    "regions",
    "reconnect_initial_s",
    "reconnect_max_s",
    "timeout_s",
]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.sampled_from(
        ["0", "/dev/video3", "rtsp://u:p@[::1", "http://a:b@host:99999/x", "file://", "ftp://x"]
    ),
)
values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=5), st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=20,
)
numbers = st.one_of(st.integers(-50, 2000), st.floats(-50, 2000, allow_nan=False))
regions = st.dictionaries(
    st.one_of(
        st.sampled_from(["player.card1", "box2.hand1.card3", "a b", ""]), st.text(max_size=8)
    ),
    st.one_of(
        values,
        st.lists(numbers, min_size=4, max_size=4),
        st.lists(st.lists(numbers, min_size=2, max_size=2), min_size=4, max_size=4),
    ),
    max_size=4,
)
mappings = st.dictionaries(
    st.one_of(st.sampled_from(KEYS), st.text(max_size=10)),
    values,
    max_size=8,
).flatmap(
    lambda base: st.fixed_dictionaries(
        {},
        optional={
            "source": st.one_of(
                values,
                st.just(0),
                st.builds(
                    lambda scheme, rest: f"{scheme}://{rest}",
                    st.sampled_from(["rtsp", "http", "https", "file", "rtsps"]),
                    st.text(alphabet="ab:@[]/.%9 ", max_size=20),
                ),
            ),
            "resolution": st.one_of(values, st.just([640, 360])),
            "regions": regions,
        },
    ).map(lambda extra: {**base, **extra})
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mappings)
@example({"source": "rtsp://u:p@[::1", "resolution": [640, 360]})
@example({"source": "http://a:b@host:99999/x", "resolution": [640, 360]})
@example({"source": "file://", "resolution": [640, 360]})
@example({"source": 0, "resolution": [640, 360], "regions": {"a": {"b": [0, 0, 1, 1]}}})
def test_any_camera_table_loads_or_raises_configuration_error(mapping: dict[str, Any]) -> None:
    try:
        config = CameraConfig.from_mapping(mapping)
    except ConfigurationError:
        return
    # What loads is usable: it names its source and round-trips through its own form.
    assert config.display_source
    assert CameraConfig.from_mapping(config.to_mapping()) == config
