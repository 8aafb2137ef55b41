// options.h - the harness's command line (the device's own options are d3d12_device.h's).
#pragma once

#include <string>

#include "d3d12_device.h"

struct Options : dmlh::DeviceOptions {  // DirectML.dll, adapter, debug layer: d3d12_device.h
    bool disable_metacommands = false;
    DWORD fence_timeout_ms = 60000;
    int poison = 0xCD;             // byte pre-filled into every output buffer; -1: none
    std::string timings_path;      // --timings: per-case phase times appended here; empty: none
    bool heap_per_case = false;    // a descriptor heap of its own for every case (the old way; for comparison)
    bool buffers_per_case = false; // buffers of its own for every case and the initializer submitted on its own
                                   // (the old way; for comparison)
    bool verbose = false;          // every step logged to stderr
};

// False (logged, usage on stderr for an unknown option) when the command line cannot be used.
bool parse_options(int argc, char** argv, Options& o);
