"""Native-harness protocol and a Python harness SDK (docs/native-harness.md).

`protocol` is the wire format shared by the runner's native backend and `server`, which serves any
in-process backend as a harness: `python -m dmlconform.harness --backend numpy`.
"""
