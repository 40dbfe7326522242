"""The bottom floor: sources read and written exactly, `[tool.decouple]`, JSON files named by an option."""
