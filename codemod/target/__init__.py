"""Code that runs inside the user's interpreter (the target), not in the tool.

The rule of this folder: its files import only the standard library and pytest, never the tool
(the target interpreter may not have it installed; it may be an older Python than the tool's), and
the tool never imports them at run time (it reads their event types for type checking only): the
runner copies each one into a private folder under the name the target loads it by (``-p``, a
script path). ``tests/test_architecture.py`` enforces the rule.
``SOURCES`` is where the runner finds them.
"""

from pathlib import Path

SOURCES = Path(__file__).resolve().parent
