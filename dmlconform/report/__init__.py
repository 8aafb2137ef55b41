"""Reporters: render a RunResult for people (console) and for tools (JSON, JUnit)."""
