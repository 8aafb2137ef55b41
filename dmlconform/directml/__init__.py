"""The real DirectML: its DLLs, the Windows programs that run them and the Wine around them. `pe.py` reads what a DLL
says about itself (machine, exports, version resource) without loading it; `library.py` says where DirectML.dll
comes from (a path given, the installed onnxruntime-directml, or the cache of releases fetched from the package
index) and fetches releases into that cache."""
