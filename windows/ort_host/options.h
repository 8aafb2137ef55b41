// options.h - the host's command line (the device's own options are d3d12_device.h's).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "d3d12_device.h"

struct Options {
    dmlh::DeviceOptions device;  // DirectML.dll, adapter, debug layer (--ep dml)
    std::string ep = "dml";
    std::string ort_path;  // empty: onnxruntime.dll next to the exe, then the DLL search path
    bool any_ort_version = false;
    std::vector<std::pair<std::string, std::string>> session_config;  // --session-config KEY=VALUE
    bool verbose = false;  // ONNX Runtime's whole log and every request on stderr
    std::string timings_path;  // --timings: per-request phase times appended here (timing.h); empty: none
    // --intra-op-threads: the size of each session's intra-op thread pool. 1 (the default): no pool, the caller's
    // thread only; 0: ONNX Runtime's own default, a pool of a thread per physical core made and torn down with every
    // session (the old way, for comparison: session.cpp says what it cost).
    int intra_op_threads = 1;
    bool fresh_heaps = false;  // --fresh-heaps: no descriptor heap pool (heap_pool.h; the old way, for comparison)
    bool fresh_buffers = false;  // --fresh-buffers: no committed buffer pool (buffer_pool.h; for comparison)
};

// False (logged, usage on stderr for an unknown option) when the command line cannot be used.
bool parse_options(int argc, char** argv, Options& o);
