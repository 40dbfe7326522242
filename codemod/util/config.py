"""`[tool.decouple]` in pyproject.toml: defaults that command-line flags override.

Recognised keys (all optional):
    exclude = ["glob", ...]        # added to the built-in vendored-folder excludes
    jobs = 2
    python = "/path/to/python"     # target interpreter (A/B runs, torch probes)
    allowlist = "tools/linter/adapters/test_linter_allowlist.json"
    linter = "auto"                # the gate: auto | off | path to test_linter.py
    rules = "auto"                 # the generation of the linter's rules: auto | gen1 | gen2
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field

from transforms.core.words import noun

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10
    import tomli as tomllib

KNOWN_KEYS = {"exclude", "jobs", "python", "allowlist", "linter", "rules"}


class ConfigError(Exception):
    pass


@dataclass(kw_only=True)
class Config:
    path: str | None = None
    exclude: list[str] = field(default_factory=list)
    jobs: int | None = None
    python: str | None = None
    allowlist: str | None = None
    linter: str | None = None
    rules: str | None = None


def find_pyproject(start: str) -> str | None:
    cur = os.path.abspath(start)
    while True:
        candidate = os.path.join(cur, "pyproject.toml")
        if os.path.isfile(candidate):
            return candidate
        parent = os.path.dirname(cur)
        if parent == cur:
            return None
        cur = parent


def load_config(start: str = ".") -> Config:
    path = find_pyproject(start)
    if path is None:
        return Config()
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"{path}: {e}") from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path} is not UTF-8: {e}") from None
    except RecursionError:  # the parser recurses per level of nesting: `exclude = [[[[...`
        raise ConfigError(f"{path} nests too deeply to be read") from None
    section = data.get("tool", {}).get("decouple", {})
    unknown = set(section) - KNOWN_KEYS
    if unknown:
        raise ConfigError(
            f"{path}: unknown {noun(len(unknown), 'key')} in [tool.decouple]: {', '.join(sorted(unknown))}"
        )
    base = os.path.dirname(path)
    cfg = Config(path=path)
    if "exclude" in section:
        if not isinstance(section["exclude"], list) or not all(isinstance(x, str) for x in section["exclude"]):
            raise ConfigError(f"{path}: [tool.decouple] exclude must be a list of globs")
        cfg.exclude = list(section["exclude"])
    if "jobs" in section:
        if not isinstance(section["jobs"], int) or section["jobs"] < 1:
            raise ConfigError(f"{path}: [tool.decouple] jobs must be a positive integer")
        cfg.jobs = section["jobs"]
    if "rules" in section:
        if not isinstance(section["rules"], str):
            raise ConfigError(f"{path}: [tool.decouple] rules must be a string (auto or a generation's name)")
        cfg.rules = section["rules"]
    for key in ("python", "allowlist", "linter"):
        if key in section:
            if not isinstance(section[key], str):
                raise ConfigError(f"{path}: [tool.decouple] {key} must be a string")
            value = section[key]
            # A bare command name ("python3") stays as it is; a relative path is the file's.
            if os.sep in value and not os.path.isabs(value):
                value = os.path.join(base, value)
            setattr(cfg, key, value)
    return cfg
