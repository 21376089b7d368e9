"""Pure numerical metrics: numpy, scipy and pandas only, no Django.

Public functions are re-exported here; see README.md, "Metrics library".
"""
