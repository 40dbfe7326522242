"""The top floor: the `decouple` commands, their options, and what turns options into a run."""
