"""What a test reads of a pipeline's graph: its applied transforms, composites included."""


def applied_transforms(pipeline):
    """Every AppliedPTransform of `pipeline` (the root, composites and their parts), in order."""
    def walk(node):
        yield node
        for part in node.parts:
            yield from walk(part)
    return walk(pipeline.transforms_stack[0])


def transform_labels(pipeline) -> list[str]:
    """The full label of every transform of `pipeline`."""
    return [t.full_label for t in applied_transforms(pipeline)]
