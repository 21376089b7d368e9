"""Grading pages, split by who uses them: ``grader`` (grading work) and ``organizer`` (running campaigns)."""
