"""Writes for analysis: runs (create, execute, sweep), the campaign report, exports."""
