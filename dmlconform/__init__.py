"""dmlconform: conformance testing of DirectML gradient operators."""

__version__ = "0.1.0"
