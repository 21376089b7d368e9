"""View models of the report: what each section shows (tables, plots, sentences, explanations),
built from a stored analysis result. Pure presentation: no queries beyond what a table links to."""
