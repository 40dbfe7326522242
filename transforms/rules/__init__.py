"""The linter's rules (`linter`), the deliberate deviations from them (`deviations`)
and the restructuring advice (`advice`), each a registry of small named entries
that carry their own examples."""
