"""GitHub Actions workflow commands: one annotation per lint message.

    ::error file=test/test_foo.py,line=12,title=DECOUPLE hw/needs-manual::TestFoo: ...

Workflow commands are parsed by the runner line by line: a property value must escape
`%`, CR, LF, `:` and `,`; the message escapes `%`, CR and LF (GitHub's toolkit rules).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from codemod.util.lintmessage import LintMessage, LintSeverity

# lintrunner severities -> workflow command names
_COMMAND = {
    LintSeverity.ERROR: "error",
    LintSeverity.WARNING: "warning",
    LintSeverity.ADVICE: "notice",
    LintSeverity.DISABLED: "notice",
}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _path(path: str) -> str:
    """Annotations need a path relative to the workspace (the job's working directory)."""
    rel = os.path.relpath(path) if os.path.isabs(path) else path
    return path if rel.startswith("..") else rel.replace(os.sep, "/")


def annotation(message: LintMessage) -> str:
    props = [f"file={escape_property(_path(message['path']))}"]
    if message.get("line"):
        props.append(f"line={message['line']}")
    props.append(f"title={escape_property(message['code'] + ' ' + message['name'])}")
    return f"::{_COMMAND[message['severity']]} {','.join(props)}::{escape_data(message['description'])}"


def render(messages: Iterable[LintMessage]) -> str:
    return "".join(annotation(m) + "\n" for m in messages)
