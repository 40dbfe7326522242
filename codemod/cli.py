"""The `decouple` command line (placeholder until the engine lands)."""

import click


@click.group()
def main() -> None:
    """Label PyTorch test classes, make torch.load explicit, prove it with an A/B run."""
