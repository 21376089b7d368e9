"""The sections of the campaign report (docs/design.md §5), one module each: `agreement` (with
confusability and FINE within BROAD: the one builder the `agreement` command shares), `behaviour`
(what a shard keeps of the event log; stability, engagement), `graders_queries` (graders,
queries), `model` (Dawid–Skene, bias and noise), `ordering`,
`systems`, `instrument`, `accounting` and `hidden_units`.

Each takes the campaign's data as `analysis.services.report` loads it (judgments with their value
columns derived once) and returns plain data for the run's JSON result. Nothing here writes.
"""
