"""The deep-web stage of the round (--deep_web forms): `step.ProbeForms`; the plain logic in
`probing` (state rows, form rows, the frontier candidates of the planner's submissions)."""
