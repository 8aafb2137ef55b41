"""A small YAML file of the user's (a waiver file, a known-issue list), read strictly: the text decoded, PyYAML's
every complaint made one message with the line it names, and the dates such files carry. The callers turn a
YamlFileError into their own one-line error, naming the file."""

from __future__ import annotations

import datetime

import yaml


class YamlFileError(ValueError):
    def __init__(self, message: str, where: str | None = None) -> None:
        super().__init__(message)
        self.message, self.where = message, where


def load_yaml_bytes(raw: bytes) -> object:
    try:
        return yaml.safe_load(raw.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise YamlFileError("is not UTF-8 text") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else None
        raise YamlFileError(f"is not YAML ({getattr(exc, 'problem', None) or exc})", where) from None
    except (ValueError, TypeError, OverflowError, RecursionError) as exc:  # PyYAML's constructors: a bad date...
        raise YamlFileError(f"is not YAML it can read ({exc})") from None


def iso_date(value: object) -> str | None:
    """YYYY-MM-DD of a date YAML read as one or as text; None for anything else."""
    if isinstance(value, datetime.date):
        return value.isoformat()
    try:
        return datetime.date.fromisoformat(value).isoformat() if isinstance(value, str) else None
    except ValueError:
        return None
