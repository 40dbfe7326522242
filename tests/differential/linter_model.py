"""An independent, table-driven statement of the upstream test linter's rules, both generations.

Written for the differential tests from the rules as documented in
/work/shared/reference/hw-classification.md (gen1, and "A newer generation": gen2); it imports
nothing from the tool. `model_messages(source, gen)` returns the (name, line) pairs that
generation's linter prints for a module, `accepted_values(source, gen)` which labels it would
accept per class.
"""

from __future__ import annotations

import ast

VALUES = ("GENERIC", "ACCELERATOR", "CPU", "CUDA", "MPS", "XPU")
DEVICE_VALUES = ("CPU", "CUDA", "MPS", "XPU")
FORBIDDEN = {"onlyCPU", "onlyCUDA", "onlyMPS", "onlyXPU", "onlyHPU", "onlyPRIVATEUSE1", "onlyOn",
             "onlyCUDAAndPRIVATEUSE1", "onlyNativeDeviceTypes", "onlyNativeDeviceTypesAnd"}
ABSENT, OPAQUE = "absent", "opaque"


# --------------------------------------------------------------------------- reading


def walk_scanned(body):
    """Statements in the linter's scan order (try: body, else, finally, handlers)."""
    for node in body:
        kind = type(node).__name__
        if kind in ("If", "For", "While"):
            yield from walk_scanned(node.body + node.orelse)
        elif kind == "With":
            yield from walk_scanned(node.body)
        elif kind == "Try":
            yield from walk_scanned(node.body + node.orelse + node.finalbody)
            for h in node.handlers:
                yield from walk_scanned(h.body)
        else:
            yield node


def is_test_def(node):
    return type(node).__name__ in ("FunctionDef", "AsyncFunctionDef") and node.name[:4] == "test"


def keyword(call, name):
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None


def string_list(call, name):
    node = keyword(call, name)
    if node is None or (isinstance(node, ast.Constant) and node.value is None):
        return ABSENT
    if isinstance(node, ast.Constant) and type(node.value) is str:
        return [node.value]
    if type(node) in (ast.List, ast.Tuple):
        if all(isinstance(e, ast.Constant) and type(e.value) is str for e in node.elts):
            return [e.value for e in node.elts]
    return OPAQUE


def flag(call, name):
    node = keyword(call, name)
    if node is None:
        return False
    if isinstance(node, ast.Constant) and type(node.value) is bool:
        return node.value
    return OPAQUE


def last_name(dec):
    target = dec.func if isinstance(dec, ast.Call) else dec
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, ast.Attribute):
        return target.attr
    return None


def takes_device(fn):
    a = fn.args
    return any(p.arg in ("device", "devices") for p in a.posonlyargs + a.args + a.kwonlyargs)


def label_of(cls):
    for stmt in cls.body:
        if isinstance(stmt, ast.Assign):
            if len(stmt.targets) != 1 or not (isinstance(stmt.targets[0], ast.Name)
                                              and stmt.targets[0].id == "hw_classification"):
                continue
            value = stmt.value
        elif isinstance(stmt, ast.AnnAssign):
            if not (isinstance(stmt.target, ast.Name) and stmt.target.id == "hw_classification"):
                continue
            if not (isinstance(stmt.annotation, ast.Name) and stmt.annotation.id == "HardwareClassification"
                    and stmt.value is not None):
                return None
            value = stmt.value
        else:
            continue
        ok = (isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name)
              and value.value.id == "HardwareClassification" and value.attr in VALUES)
        return value.attr if ok else None
    return None


# --------------------------------------------------------------------------- the rule table
# Each entry: (rule name, line kind, predicate that is True when the rule is BROKEN).
# line kind: "class" (the class line), "call" (the instantiation), "method" (per test method).


def _only_for_wrong(value, inst):
    got = string_list(inst, "only_for")
    return got != [value.lower()]


ACCELERATOR_PARTS = {"accelerator", "cuda", "hpu", "ipu", "mps", "mtia", "xla", "xpu"}


def accelerator_call_lines(cls):
    """Lines of the calls in the class body (not its decorators) whose callee, unparsed and split
    at the dots, starts with `torch` and has an accelerator part (one entry per call)."""
    lines = []
    for stmt in cls.body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                parts = ast.unparse(node.func).split(".")
                if parts[0] == "torch" and ACCELERATOR_PARTS & set(parts):
                    lines.append(node.lineno)
    return lines


TABLE = {
    "GENERIC": [
        ("instantiation", "class", lambda v, c, inst, m: inst is not None),
        ("device_param", "method", lambda v, c, inst, m: takes_device(m)),
    ],
    "ACCELERATOR": [
        ("instantiation", "class", lambda v, c, inst, m: inst is None),
        ("device_param", "method", lambda v, c, inst, m: not takes_device(m)),
        ("decorator", "method-each-decorator", lambda v, c, inst, d: last_name(d) in FORBIDDEN),
        ("only_for", "call", lambda v, c, inst, m: string_list(inst, "only_for") != ABSENT),
    ],
}
for _device in DEVICE_VALUES:
    TABLE[_device] = [
        ("instantiation", "class", lambda v, c, inst, m: inst is None),
        ("device_param", "method", lambda v, c, inst, m: not takes_device(m)),
        ("except_for", "call", lambda v, c, inst, m: string_list(inst, "except_for") != ABSENT),
        ("only_for", "call", lambda v, c, inst, m: _only_for_wrong(v, inst)),
    ]
TABLE["MPS"].append(("allow_mps", "call", lambda v, c, inst, m: flag(inst, "allow_mps") is False))
TABLE["XPU"].append(("allow_xpu", "call", lambda v, c, inst, m: flag(inst, "allow_xpu") is False))

# The newer generation: GENERIC also may not call accelerator APIs; the device values only declare.
TABLE_GEN2 = {
    "GENERIC": TABLE["GENERIC"] + [("accelerator_availability", "calls", None)],
    "ACCELERATOR": TABLE["ACCELERATOR"],
    **{device: [] for device in DEVICE_VALUES},
}
TABLES = {"gen1": TABLE, "gen2": TABLE_GEN2}
REPORTS_DUPLICATES = {"gen1": True, "gen2": False}


def broken(value, cls, inst, gen="gen1"):
    """[(rule, line)] the class breaks when labelled `value` (inst: the checked call or None)."""
    out = []
    tests = [s for s in cls.body if is_test_def(s)]
    for name, where, pred in TABLES[gen][value]:
        if where == "class":
            if pred(value, cls, inst, None):
                out.append((name, cls.lineno))
        elif where == "call":
            if inst is not None and pred(value, cls, inst, None):
                out.append((name, inst.lineno))
        elif where == "method":
            out += [(name, m.lineno) for m in tests if pred(value, cls, inst, m)]
        elif where == "calls":
            out += [(name, line) for line in accelerator_call_lines(cls)]
        else:
            out += [(name, m.lineno) for m in tests for d in m.decorator_list if pred(value, cls, inst, d)]
    return out


# --------------------------------------------------------------------------- a module


def collect(source):
    tree = ast.parse(source)
    classes, calls, dups = {}, {}, []
    for stmt in walk_scanned(tree.body):
        if isinstance(stmt, ast.ClassDef) and any(is_test_def(s) for s in stmt.body):
            if stmt.name in classes:
                dups.append(("[duplicate_class]", stmt.lineno))
            classes[stmt.name] = stmt
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            call = stmt.value
            f = call.func
            fname = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            if fname == "instantiate_device_type_tests" and call.args and isinstance(call.args[0], ast.Name):
                if call.args[0].id in calls:
                    dups.append(("[duplicate_instantiation]", call.lineno))
                calls[call.args[0].id] = call
    return classes, calls, dups


def model_messages(source, gen="gen1"):
    classes, calls, dups = collect(source)
    out = list(dups) if REPORTS_DUPLICATES[gen] else []
    for name, cls in classes.items():
        value = label_of(cls)
        if value is None:
            out.append(("[hw_classification]", cls.lineno))
            continue
        out += [(f"[{rule}]", line) for rule, line in broken(value, cls, calls.get(name), gen)]
    return sorted(out)


def accepted_values(source, gen="gen1"):
    """{class name: (class line, [values the linter accepts])} for the checked definitions."""
    classes, calls, _ = collect(source)
    return {name: (cls.lineno, [v for v in VALUES if not broken(v, cls, calls.get(name), gen)])
            for name, cls in classes.items()}
