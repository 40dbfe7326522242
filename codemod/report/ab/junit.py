"""JUnit XML view of an A/B result: arm B's outcomes, each annotated with its A/B category.

One <testsuite> for arm B.  Every <testcase> has classname and name split
from the node id the way pytest's own junitxml does it, its time, a
<failure>/<error>/<skipped> child as the outcome demands (message = the error
signature, text = the traceback) and <properties> with `ab.category` and
`ab.a_outcome` (plus `ab.a_signature` when A failed differently and
`ab.mapped_from` for renamed tests).  A test that ran in A and does
not run in B (coverage-lost), or that A had and B no longer runs (missing-in-b),
is reported as a failure so CI sees it, whatever B's own outcome (skipped,
deselected, absent); tracebacks are the reports' short ones (the tests' frames and
the raising frame); the suite's properties carry each arm's totals and census;
characters XML 1.0 forbids are written as visible `\\xNN` escapes.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import asdict

from codemod.ab.result.model import ABResult, Category, Outcome, OutcomeValue, TestComparison
from codemod.report.ab.facts import (
    arm_roots,
    category_counts,
    headline,
    ordered_tests,
    report_traceback,
    visible_controls,
)

__all__ = ["render", "split_nodeid"]


def _x(value: object) -> str:
    return visible_controls(str(value), strip_ansi=False)


def split_nodeid(nodeid: str) -> tuple[str, str, str]:
    """(file, classname, name) from a pytest node id.

    `test/a/test_b.py::TestC::test_d[x::y]` -> ("test/a/test_b.py",
    "test.a.test_b.TestC", "test_d[x::y]"); parameters may contain "::".
    """
    base, params = nodeid, ""
    bracket = nodeid.find("[")
    if bracket != -1 and nodeid.endswith("]"):
        base, params = nodeid[:bracket], nodeid[bracket:]
    # a subtest suffix such as "test_x [dtype=float]" stays with the name
    parts = base.split("::")
    path = parts[0]
    module = path[:-3] if path.endswith(".py") else path
    module = module.replace("\\", "/").strip("/").replace("/", ".")
    if len(parts) == 1:
        return path, module, (path.rsplit("/", 1)[-1] + params)
    return path, ".".join([module] + parts[1:-1]), parts[-1] + params


def _message(o: Outcome) -> str:
    return o.signature or headline(o)


_LOST = (Category.COVERAGE_LOST, Category.MISSING_IN_B)


def _outcome_element(case: ET.Element, o: Outcome | None, c: TestComparison, roots: list[str]) -> str:
    """Append the child that encodes arm B's outcome; return the counter it feeds."""
    if c.category in _LOST:
        b = o.outcome if o is not None else "absent from B"
        el = ET.SubElement(
            case,
            "failure",
            message=_x(f"{c.category}: {c.a.outcome if c.a else '?'} in A, {b}" + (f": {c.note}" if c.note else "")),
            type=_x(f"ab.{c.category}"),
        )
        el.text = _x(c.note or "")
        return "failures"
    if o is None:
        el = ET.SubElement(case, "skipped", message=_x(c.note or c.category), type=_x(f"ab.{c.category}"))
        return "skipped"
    kind = o.outcome
    if kind in (OutcomeValue.PASSED, OutcomeValue.XPASSED):
        return ""
    if kind in (OutcomeValue.FAILED, OutcomeValue.TIMEOUT):
        el = ET.SubElement(
            case,
            "failure",
            message=_x(_message(o)),
            type=_x(o.exc_type or ("timeout" if kind == OutcomeValue.TIMEOUT else "failure")),
        )
        el.text = _x(_traceback(o, roots))
        return "failures"
    if kind == OutcomeValue.INCOMPLETE:  # no outcome: never a pass nor a skip
        el = ET.SubElement(case, "error", message=_x(o.message or kind), type="ab.incomplete")
        el.text = _x(_traceback(o, roots))
        return "errors"
    if kind in (OutcomeValue.ERROR, OutcomeValue.CRASHED):
        etype = o.exc_type or (f"crash ({o.signal})" if o.signal else kind)
        el = ET.SubElement(case, "error", message=_x(_message(o)), type=_x(etype))
        el.text = _x(_traceback(o, roots))
        return "errors"
    # skipped, xfailed, not-run, deselected
    types = {
        OutcomeValue.XFAILED: "pytest.xfail",
        OutcomeValue.NOT_RUN: "not-run",
        OutcomeValue.DESELECTED: "deselected",
    }
    etype = types.get(kind, "pytest.skip")
    el = ET.SubElement(case, "skipped", message=_x(o.message.splitlines()[0] if o.message else kind), type=etype)
    if o.traceback:
        el.text = _x(_traceback(o, roots))
    return "skipped"


def _traceback(o: Outcome, roots: list[str]) -> str:
    return report_traceback(o.traceback, "en", roots) if o.traceback else o.message


def render(result: ABResult) -> str:
    """JUnit XML (a string with an XML declaration) of arm B."""
    arm_b = result.arm("B")
    root = ET.Element("testsuites", name="decouple A/B")
    suite = ET.SubElement(
        root, "testsuite", name=_x(f"decouple-ab arm B: {arm_b.label}" if arm_b else "decouple-ab arm B")
    )
    props = ET.SubElement(suite, "properties")
    suite_props = {
        "ab.verdict": result.verdict,
        "ab.verdict_reason": result.verdict_reason,
        "ab.tool_version": result.tool_version,
        "ab.normaliser_version": result.normaliser_version,
        "ab.base_ref": result.base_ref or "",
        "ab.arm_b.source": arm_b.source if arm_b else "",
        "ab.arm_b.command": arm_b.command if arm_b else "",
    }
    suite_props.update({f"ab.count.{cat}": str(n) for cat, n in category_counts(result).items()})
    for arm in (a for a in result.arms if a.name in ("A", "B")):
        suite_props.update({f"ab.totals.{arm.name}.{k}": str(v) for k, v in asdict(arm.totals).items()})
        suite_props.update({f"ab.census.{arm.name}.{k}": str(v) for k, v in arm.classification_counts.items()})
    for name, value in suite_props.items():
        ET.SubElement(props, "property", name=name, value=_x(value))

    roots = arm_roots(result)
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    time_total = 0.0
    for c in ordered_tests(result):
        o = c.b
        if o is None and c.category not in (*_LOST, Category.NOT_RUN_HERE):
            continue  # absent from B for another reason: nothing of arm B to report
        path, classname, name = split_nodeid(c.nodeid)
        duration = o.duration if o is not None else 0.0
        time_total += duration
        case = ET.SubElement(
            suite, "testcase", classname=_x(classname), name=_x(name), file=_x(path), time=f"{duration:.3f}"
        )
        cprops = ET.SubElement(case, "properties")
        ET.SubElement(cprops, "property", name="ab.category", value=_x(c.category))
        ET.SubElement(cprops, "property", name="ab.a_outcome", value=_x(c.a.outcome if c.a else "absent"))
        ET.SubElement(cprops, "property", name="ab.b_outcome", value=_x(o.outcome if o else "absent"))
        if c.a is not None and c.a.signature and (o is None or c.a.signature != o.signature):
            ET.SubElement(cprops, "property", name="ab.a_signature", value=_x(c.a.signature))
        if c.mapped_from:
            ET.SubElement(cprops, "property", name="ab.mapped_from", value=_x(c.mapped_from))
        if o is not None and o.reruns:
            ET.SubElement(cprops, "property", name="ab.reruns", value=_x(",".join(o.reruns)))
        counter = _outcome_element(case, o, c, roots)
        totals["tests"] += 1
        if counter:
            totals[counter] += 1

    for el in (root, suite):
        for key, total in totals.items():
            el.set(key, str(total))
        el.set("time", f"{(arm_b.duration if arm_b and arm_b.duration else time_total):.3f}")
    if result.started:
        suite.set("timestamp", _x(result.started))

    ET.indent(root, space="  ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
