"""One exception type for bad input, so entry points can print one line and exit non-zero."""


class InputError(ValueError):
    """Bad user input (config, trace, catalog). The message names the source, field and allowed values."""

    def __init__(self, source: str, field: str, problem: str):
        self.source = source
        self.field = field
        self.problem = problem
        super().__init__(f"{source}: {field}: {problem}")


def require(condition: bool, source: str, field: str, problem: str) -> None:
    if not condition:
        raise InputError(source, field, problem)
