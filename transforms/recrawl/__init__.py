"""Incremental crawling (issue #13): the revisit scheduling state and its update (pure:
`state`), and the Beam step that writes a round's state delta (`step`)."""
