"""The linter's rules by generation, the deliberate deviations from them, the restructuring advice.

The rules of each generation (a `RuleSet` of `registry`), the deliberate deviations from them
(`deviations`) and the names and texts of the restructuring advice (`advice`), each a registry of
small named entries; rules and deviations carry their own examples. Above `core`, below the
diagnosis, the labelling and the restructuring that use them.
"""
