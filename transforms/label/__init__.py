"""Labelling test classes: the decisions, the byte-minimal edits, the transform that composes them.

The decisions (`classify`: the rules, deviations and advice combined per class), the byte-minimal
edits (`hw_edit`, `import_merge`) and the transform that composes them (`transform.HwLabel`).
"""

from transforms.label.transform import HwLabel

__all__ = ["HwLabel"]
