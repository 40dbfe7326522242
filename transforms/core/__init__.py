"""The bottom floor of the transforms: what every other folder builds on.

Nothing here imports from the other folders. The enum's six members (`members`), the `StrEnum`
base of the typed fields (`strenum`), the transform contract (`base`: `Finding`,
`TransformResult`), the facts about test classes (`facts`) as the module-wide scan (`analysis`) and
one class's reading (`class_reading`) find them, source text as physical lines
(`source_lines`), and counted nouns for every floor's messages (`words`).
"""
