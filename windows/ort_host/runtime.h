// runtime.h - ONNX Runtime as the host uses it: onnxruntime.dll loaded and its API table checked, the environment
// with its log, and (--ep dml) the device handed to the DML EP.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "d3d12_device.h"
#include "ort_api.h"
#include "options.h"

// ONNX Runtime's log: kept while a session is created with verbose logging (where each node was placed), and
// written to stderr from WARNING up (everything with --verbose).
// ONNX Runtime may log from its own threads. An SRW lock, not std::mutex: mingw-w64's win32 thread model has none.
struct LogCapture {
    SRWLOCK lock = SRWLOCK_INIT;
    bool active = false;
    std::string text;
    bool echo_all = false;  // --verbose: every message to stderr, not only WARNING and up
};

struct LogLock {
    explicit LogLock(LogCapture& log) : log_(log) { AcquireSRWLockExclusive(&log_.lock); }
    ~LogLock() { ReleaseSRWLockExclusive(&log_.lock); }
    LogLock(const LogLock&) = delete;
    LogLock& operator=(const LogLock&) = delete;

private:
    LogCapture& log_;
};

struct Runtime {
    Options opt;
    HMODULE module = nullptr;
    std::string ort_path, ort_version, ort_file_version, providers;
    ort::Api api{};
    const ort::DmlApi* dml_api = nullptr;
    ort::Env* env = nullptr;  // logs through ort_log into `log` (its logger parameter)
    ort::MemoryInfo* cpu_memory = nullptr;
    dmlh::DmlDevice device;  // --ep dml only
    LogCapture log;
    std::vector<std::pair<std::string, std::string>> extra;

    bool dml() const { return opt.ep == "dml"; }
};

// The text of an OrtStatus (released), "" for success.
std::string status_text(Runtime& rt, ort::Status* st, int* code = nullptr);
// Loads and checks onnxruntime.dll, creates the environment and (--ep dml) the device; returns an error message,
// or "" on success.
std::string init_runtime(Runtime& rt);
std::string hello_reply(const Runtime& rt);
