// options.cpp - the harness's command line (see options.h).
#include "options.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

using dmlh::log_line;

static const char kUsage[] =
    "usage: dml_harness.exe [options]   (speaks docs/native-harness.md on stdin/stdout)\n"
    "  --disable-metacommands  compile with DML_EXECUTION_FLAG_DISABLE_META_COMMANDS\n"
    "  --fence-timeout-ms N    GPU wait before the device counts as hung (default 60000)\n"
    "  --poison BYTE|none      byte written into output buffers before each dispatch (default 0xCD)\n"
    "  --timings FILE          append one JSON line of phase times (microseconds) per request to FILE;\n"
    "                          %p in FILE becomes the process id (replies are unchanged)\n"
    "  --heap-per-case         a new descriptor heap for every case instead of one for all (slow under\n"
    "                          vkd3d + lavapipe; for comparison with the shared heap)\n"
    "  --buffers-per-case      new buffers for every case and the initializer in a submission of its own,\n"
    "                          instead of reused buffers and one submission (for comparison)\n"
    "  --verbose               log every step to stderr\n"
    "the device:\n";

bool parse_options(int argc, char** argv, Options& o) {
    for (int i = 1; i < argc; i++) {
        const dmlh::OptionRead device = dmlh::read_device_option(argc, argv, i, o);
        if (device == dmlh::OptionRead::kBad) return false;
        if (device == dmlh::OptionRead::kTaken) continue;
        const std::string a = argv[i];
        const char* v = nullptr;
        if (a == "--disable-metacommands") {
            o.disable_metacommands = true;
        } else if (a == "--fence-timeout-ms") {
            if (!(v = dmlh::option_value(argc, argv, i))) return false;
            o.fence_timeout_ms = DWORD(strtoul(v, nullptr, 10));
        } else if (a == "--poison") {
            if (!(v = dmlh::option_value(argc, argv, i))) return false;
            o.poison = strcmp(v, "none") == 0 ? -1 : int(strtol(v, nullptr, 0) & 0xFF);
        } else if (a == "--timings") {
            if (!(v = dmlh::option_value(argc, argv, i))) return false;
            o.timings_path = v;
        } else if (a == "--heap-per-case") {
            o.heap_per_case = true;
        } else if (a == "--buffers-per-case") {
            o.buffers_per_case = true;
        } else if (a == "--verbose") {
            o.verbose = true;
        } else {
            return dmlh::reject_option(a, kUsage);
        }
    }
    return true;
}
