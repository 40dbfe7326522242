"""From the labelling options (`--classification`, `--set`, `--force`, `--restructure`,
`--torch-load`, `--globals`, `--explain`) to the transforms a run applies: one builder, so
that `decouple refactor` edits exactly as `decouple apply` does."""

from __future__ import annotations

from dataclasses import dataclass, field

import click

from codemod.cli.options import EditChoice, LabelChoice
from codemod.engine import torch_probe as target
from codemod.util.jsonfile import read_option_json
from transforms.core.base import Transform
from transforms.core.members import MEMBERS as VALUES
from transforms.label import HwLabel
from transforms.torch_load import check_mode_supported


class SetupError(Exception):
    """The target interpreter or the --globals file cannot serve the transforms (exit 2)."""


@dataclass
class TransformSetup:
    transforms: list[Transform] = field(default_factory=list)  # in the order they run on a file
    warnings: list[str] = field(default_factory=list)  # about the target, for the run's summary


def _value(raw: str, what: str) -> str:
    value = raw.strip().upper()
    if value not in VALUES:
        raise click.BadParameter(f"{raw!r} is not one of {', '.join(VALUES)}", param_hint=what)
    return value


def label_transform(choice: LabelChoice) -> HwLabel:
    overrides: list[tuple[str, str]] = []
    for item in choice.per_class:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise click.BadParameter(f"{item!r} is not CLASS=VALUE", param_hint="--set")
        name, value = name.strip(), _value(value, "--set")
        if any(n == name and v != value for n, v in overrides):
            raise click.BadParameter(f"{name} is given two different values", param_hint="--set")
        overrides.append((name, value))
    if not choice.classification:  # inferred, class by class
        return HwLabel(per_class=tuple(overrides), force=choice.force)
    value = _value(choice.classification, "--classification")
    return HwLabel(classification=value, per_class=tuple(overrides), force=choice.force)


def read_globals(path: str | None):
    if path is None:
        return None
    try:
        data = read_option_json(path, "--globals")
    except ValueError as e:
        raise SetupError(str(e)) from None
    if not isinstance(data, dict) or data.get("schema_version") != 1:
        raise SetupError(f"--globals {path} is not a discover-globals result (schema_version 1)")
    return data


def build_transforms(labels: LabelChoice, edits: EditChoice, *, label: bool, python: str | None) -> TransformSetup:
    """Restructure (before labelling: the labels go on the resulting classes), label (unless
    `label` is false), torch.load. `python` is the target interpreter (None: this one), probed
    for its torch. Usage errors are click's; SetupError for a target or --globals file that
    cannot serve."""
    torch_load = edits.torch_load
    if (edits.globals_file or edits.explain) and not torch_load:
        raise click.UsageError("--globals and --explain go with --torch-load")
    setup = TransformSetup()
    if edits.restructure_names:
        from transforms import restructure  # late: a run without --restructure never imports it

        try:
            selected = restructure.parse_selection(edits.restructure_names)
        except ValueError as e:
            raise click.BadParameter(str(e), param_hint="--restructure") from e
        if selected:
            setup.transforms.append(restructure.Restructure(selected))
    if label:
        setup.transforms.append(label_transform(labels))
    if not (torch_load or label):
        return setup
    # torch-load needs the real version (import); the label check only reads files.
    info = target.probe(python, import_torch=bool(torch_load))
    if python and not info.executable:
        raise SetupError(info.reason)  # the named interpreter does not even run
    if torch_load:
        refusal = (
            check_mode_supported(torch_load, info.torch_version)
            if info.torch_version
            else f"--torch-load needs torch in the target interpreter: {info.reason}"
        )
        if refusal:
            raise SetupError(refusal)
        from transforms.torch_load import TorchLoad  # late: it imports LibCST

        setup.transforms.append(
            TorchLoad(torch_load, read_globals(edits.globals_file), info.torch_version, edits.explain)
        )
    if label and info.has_hw_classification is False:
        setup.warnings.append(
            f"torch {info.torch_version_str} in {info.executable or python} has no HardwareClassification "
            "(first released in 2.14): the labelled files will fail to import there"
        )
    elif label and info.torch_version is None:
        setup.warnings.append(f"could not check the target for HardwareClassification: {info.reason}")
    return setup
