"""The table: one pure state machine over the shoe and round lifecycles (its journal and
runtime are in controller.service).

A regular package (not a namespace one) so that ``setuptools.packages.find`` ships it and
import-linter can check its layer contract.
"""
