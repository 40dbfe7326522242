"""The bottom floor: sources read and written exactly, `[tool.decouple]`, JSON files options name."""
