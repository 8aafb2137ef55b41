"""Suite files (format dmlconform/v1) and everything needed to turn them into cases."""

from __future__ import annotations


def one_line(text: str) -> str:
    """A message as the one line the CLI prints: line breaks from the input (an id, a value) shown escaped."""
    return text.replace("\r", "\\r").replace("\n", "\\n")


class SuiteError(Exception):
    """Unusable suite input. The message is one line naming the file, the case and the field."""

    def __init__(self, file: object, message: str, case: str | None = None, field: str | None = None) -> None:
        parts = [str(file)]
        if case is not None:
            parts.append(f"case '{case}'")
        if field:
            parts.append(field)
        parts.append(message)
        super().__init__(one_line(": ".join(parts)))
        self.file, self.case, self.field, self.message = file, case, field, message

    def __reduce__(self) -> tuple[type[SuiteError], tuple[object, str, str | None, str | None]]:
        return type(self), (self.file, self.message, self.case, self.field)  # suites may be parsed in other processes
