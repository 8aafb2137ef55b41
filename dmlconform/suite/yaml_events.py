"""YAML documents of plain data read straight from libyaml's events: what `yaml.load(text, CSafeLoader)` gives,
about four times faster.

PyYAML's C loader parses in C but composes a Python node object per scalar, each resolved by a Python method
running its regular expressions, before the constructor walks the nodes again: for a suite file that is 85 % of
the load. Suite files are plain data (mappings, sequences, scalars), so this reads the parser's events and
builds the values at once, with PyYAML's own resolver table and constructors, and a cache of the plain scalars
already seen in the document (a suite repeats its keys, dtypes and shapes thousands of times).

Anything beyond plain data and its aliases (an explicit tag, a merge key, a mapping used as a key, more than
one document) is left to `yaml.load` itself, which then gives its value or its error: the result is always
exactly PyYAML's. Syntax errors are libyaml's own, raised while reading the events, as with `yaml.load`.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from yaml.constructor import SafeConstructor
from yaml.events import (
    AliasEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)
from yaml.nodes import ScalarNode
from yaml.resolver import Resolver

# libyaml's parser is about ten times faster than the pure-Python one and reads the same documents; PyYAML
# ships it in its wheels, so the fallback is for a PyYAML built from source without libyaml.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_STR, _NULL, _BOOL = "tag:yaml.org,2002:str", "tag:yaml.org,2002:null", "tag:yaml.org,2002:bool"
_INT, _FLOAT, _TIMESTAMP = "tag:yaml.org,2002:int", "tag:yaml.org,2002:float", "tag:yaml.org,2002:timestamp"
#: Plain decimal integers and floats: int() and float() read them exactly as PyYAML's constructors do.
_DECIMAL_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
_DECIMAL_FLOAT = re.compile(r"[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+][0-9]+)?")
_CONSTRUCTOR = SafeConstructor()
_WILDCARD = tuple(Resolver.yaml_implicit_resolvers.get(None, []))
#: Stands for "no key read yet" and "not seen yet": no YAML value is this object.
_NONE = object()
_RESOLVERS = {first: tuple(resolvers) + _WILDCARD for first, resolvers in Resolver.yaml_implicit_resolvers.items()
              if first is not None}


class _NotPlainData(Exception):
    """The document holds something this reader leaves to PyYAML."""


def load_yaml(text: str) -> Any:
    """`yaml.load(text, Loader=CSafeLoader)` (SafeLoader where PyYAML has no libyaml)."""
    try:
        return _from_events(text)
    except _NotPlainData:
        return yaml.load(text, Loader=_LOADER)


def _from_events(text: str) -> Any:
    parser = _LOADER(text)
    try:
        parser.get_event()  # stream start
        if parser.check_event(StreamEndEvent):
            return None
        parser.get_event()  # document start
        value = _document(parser)
        parser.get_event()  # document end
        if not parser.check_event(StreamEndEvent):
            raise _NotPlainData  # more than one document: PyYAML says so
        return value
    finally:
        parser.dispose()


def _document(parser: Any) -> Any:
    scalars: dict[str, Any] = {}
    anchors: dict[str, Any] = {}
    #: Open collections, innermost last; for a mapping, its key once read and waiting for its value.
    open_collections: list[list[Any]] = []
    root: Any = None
    get_event = parser.get_event
    while True:
        event = get_event()
        kind = type(event)
        opens = kind is MappingStartEvent or kind is SequenceStartEvent
        if kind is ScalarEvent:
            if event.tag is not None:
                raise _NotPlainData
            if event.implicit[0]:
                value = scalars.get(event.value, _NONE)
                if value is _NONE:
                    value = scalars[event.value] = _plain_scalar(event.value)
            else:
                value = event.value
        elif opens:
            if event.tag is not None:
                raise _NotPlainData
            value = {} if kind is MappingStartEvent else []
        elif kind is MappingEndEvent or kind is SequenceEndEvent:
            open_collections.pop()
            if not open_collections:
                return root
            continue
        else:  # an alias: the very object its anchor named, as PyYAML gives it
            value = anchors.get(event.anchor, _NONE)
            if value is _NONE:
                raise _NotPlainData  # an undefined alias: PyYAML says so
        if kind is not AliasEvent and event.anchor is not None:
            if event.anchor in anchors:
                raise _NotPlainData  # a duplicate anchor: PyYAML says so
            anchors[event.anchor] = value
        if open_collections:
            innermost = open_collections[-1]
            collection = innermost[0]
            if type(collection) is list:
                collection.append(value)
            elif innermost[1] is _NONE:
                if type(value) is dict or type(value) is list:
                    raise _NotPlainData  # a collection as a key: PyYAML refuses it
                innermost[1] = value
            else:
                collection[innermost[1]] = value
                innermost[1] = _NONE
        else:
            root = value
        if opens:
            open_collections.append([value, _NONE])
        elif not open_collections:
            return root


def _plain_scalar(value: str) -> Any:
    """A plain scalar resolved and constructed as SafeLoader does it."""
    tag = next((tag for tag, pattern in _RESOLVERS.get(value[:1], _WILDCARD) if pattern.match(value)), _STR)
    if tag == _STR:
        return value
    if tag == _INT and _DECIMAL_INT.fullmatch(value):
        return int(value)
    if tag == _FLOAT and _DECIMAL_FLOAT.fullmatch(value):
        return float(value)
    if tag == _NULL:
        return None
    if tag == _BOOL:
        return SafeConstructor.bool_values[value.lower()]
    if tag in (_INT, _FLOAT, _TIMESTAMP):
        return _CONSTRUCTOR.yaml_constructors[tag](_CONSTRUCTOR, ScalarNode(tag, value))
    raise _NotPlainData  # a merge key ('<<') or '=': PyYAML decides
