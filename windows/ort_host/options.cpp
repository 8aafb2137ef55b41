// options.cpp - the host's command line (see options.h).
#include "options.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

using dmlh::log_line;

static const char kUsage[] =
    "usage: ort_dml_host.exe [options]   (speaks docs/native-harness.md section 9 on stdin/stdout)\n"
    "  --ep dml|cpu            execution provider (default dml; cpu is the control)\n"
    "  --onnxruntime PATH      onnxruntime.dll to load (default: next to this exe, else the DLL search path)\n"
    "  --any-ort-version       run an onnxruntime.dll other than 1.24.x (its OrtApi table is still checked)\n"
    "  --session-config K=V    a session config entry for every session (repeatable), e.g.\n"
    "                          ep.dml.disable_graph_fusion=1\n"
    "  --timings FILE          append one JSON line of phase times (microseconds) per request to FILE;\n"
    "                          %p in FILE becomes the process id (replies are unchanged)\n"
    "  --intra-op-threads N    each session's intra-op thread pool: 1 (default) none, the calling thread only;\n"
    "                          0 ONNX Runtime's default, a thread per physical core made with every session\n"
    "  --fresh-heaps           every shader-visible descriptor heap the EP asks for made afresh, instead of\n"
    "                          handing out again those earlier sessions released (under Wine; for comparison)\n"
    "  --fresh-buffers         every committed buffer the EP asks for made afresh, instead of handing out\n"
    "                          again those earlier sessions released (under Wine; for comparison)\n"
    "  --verbose               ONNX Runtime's log and every request on stderr\n"
    "the device (--ep dml):\n";

bool parse_options(int argc, char** argv, Options& o) {
    for (int i = 1; i < argc; i++) {
        const dmlh::OptionRead device = dmlh::read_device_option(argc, argv, i, o.device);
        if (device == dmlh::OptionRead::kBad) return false;
        if (device == dmlh::OptionRead::kTaken) continue;
        const std::string a = argv[i];
        const char* v = nullptr;
        if (a == "--ep") {
            if (!(v = dmlh::option_value(argc, argv, i))) return false;
            o.ep = v;
            if (o.ep != "dml" && o.ep != "cpu") {
                log_line("--ep %s: use dml or cpu", v);
                return false;
            }
        } else if (a == "--onnxruntime") {
            if (!(v = dmlh::option_value(argc, argv, i))) return false;
            o.ort_path = v;
        } else if (a == "--any-ort-version") {
            o.any_ort_version = true;
        } else if (a == "--session-config") {
            if (!(v = dmlh::option_value(argc, argv, i))) return false;
            const char* eq = strchr(v, '=');
            if (!eq || eq == v) {
                log_line("--session-config %s: use KEY=VALUE", v);
                return false;
            }
            o.session_config.emplace_back(std::string(v, eq), std::string(eq + 1));
        } else if (a == "--timings") {
            if (!(v = dmlh::option_value(argc, argv, i))) return false;
            o.timings_path = v;
        } else if (a == "--intra-op-threads") {
            if (!(v = dmlh::option_value(argc, argv, i))) return false;
            char* end = nullptr;
            const long n = strtol(v, &end, 10);
            if (!*v || *end || n < 0 || n > 1024) {
                log_line("--intra-op-threads %s: give 1 (no pool), 0 (ONNX Runtime's default) or up to 1024", v);
                return false;
            }
            o.intra_op_threads = int(n);
        } else if (a == "--fresh-heaps") {
            o.fresh_heaps = true;
        } else if (a == "--fresh-buffers") {
            o.fresh_buffers = true;
        } else if (a == "--verbose") {
            o.verbose = true;
        } else {
            return dmlh::reject_option(a, kUsage);
        }
    }
    return true;
}
