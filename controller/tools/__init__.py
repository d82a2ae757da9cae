"""The top floor: the ``livetable`` command line and its commands (ctl, demo and its view,
journal, rules, studio, camera calibration), the benchmarks and the crash-test runner."""
