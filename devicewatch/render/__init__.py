"""Runs and comparisons as text, tables and files: the report, the comparison table, export
formats, and the one palette every view draws with. No UI framework here."""
