"""Work over run results, one layer above the runner: the JSON result document, expectations (baselines,
skips, flakes), the resume journal and the merging of shards. Nothing here imports a backend."""

from __future__ import annotations


class ResultsError(ValueError):
    """Unusable results input; the message is one line naming the file, where in it, and the field."""

    def __init__(self, file: object, message: str, where: str | None = None, field: str | None = None) -> None:
        parts = [str(file)]
        if where:
            parts.append(where)
        if field:
            parts.append(f"field {field}")
        parts.append(message)
        # Line breaks from the input (an id, a value) shown escaped: the CLI prints one line.
        super().__init__(": ".join(parts).replace("\r", "\\r").replace("\n", "\\n"))
