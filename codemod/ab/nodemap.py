"""`--map OLD=NEW` and `--map-file`: the B-side node id of a renamed or moved A-side test."""

from __future__ import annotations

import re
from collections.abc import Iterable

from codemod.util.jsonfile import read_option_json

_DEVICE_SUFFIXES = ("CPU", "CUDA", "MPS", "XPU", "META", "LAZY", "HPU", "NPU", "MTIA", "PRIVATEUSE1")


def parse_mapping(items: Iterable[str]) -> dict[str, str]:
    out = {}
    for item in items:
        if "=" not in item:
            raise ValueError(f"--map expects OLD=NEW, got {item!r}")
        old, new = item.split("=", 1)
        old, new = old.strip(), new.strip()
        if not old or not new:
            raise ValueError(f"--map expects OLD=NEW, got {item!r}")
        out[old] = new
    return out


def read_map_file(path: str) -> dict[str, str]:
    """The `map` entries of a test-map JSON (`decouple apply --restructure ... --map-out`)."""
    data = read_option_json(path, "--map-file")
    if not isinstance(data, dict) or data.get("schema_version") != 1 or not isinstance(data.get("map"), list):
        raise ValueError(f"--map-file {path} is not a test map (schema_version 1 with a `map` list)")
    out = {}
    for entry in data["map"]:
        if not (isinstance(entry, dict) and isinstance(entry.get("old"), str) and isinstance(entry.get("new"), str)):
            raise ValueError(f"--map-file {path}: every `map` entry needs string `old` and `new`")
        if entry["old"].startswith("re:"):
            try:
                re.compile(entry["old"][3:])
            except re.error as e:
                raise ValueError(f"--map-file {path}: bad regex {entry['old']!r}: {e}") from None
        out[entry["old"]] = entry["new"]
    return out


def map_nodeid(nodeid: str, mapping: dict[str, str]) -> str | None:
    """The B-side node id of an A-side node id under --map, or None. An OLD of the form
    `re:REGEX` must match the whole node id and NEW is its expansion template (generated
    names such as TestFooCPU::test_x_float32_cpu); an empty expansion means "not generated
    in B" (see compare_arms)."""
    for old, new in mapping.items():
        if old.startswith("re:"):
            match = re.fullmatch(old[3:], nodeid)
            if match:
                return match.expand(new)
            continue
        if "::" in old or old.endswith(".py"):
            if nodeid == old:
                return new
            for sep in ("::", "["):
                if nodeid.startswith(old + sep):
                    return new + nodeid[len(old) :]
            continue
        parts = nodeid.split("::")
        changed = False
        for i, part in enumerate(parts[1:], start=1):
            name, bracket, rest = part.partition("[")
            if name == old:
                parts[i] = new + bracket + rest
                changed = True
            elif name.startswith(old) and name[len(old) :].upper() in _DEVICE_SUFFIXES:
                parts[i] = new + name[len(old) :] + bracket + rest
                changed = True
        if changed:
            return "::".join(parts)
    return None
