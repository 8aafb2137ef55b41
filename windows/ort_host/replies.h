// replies.h - the host's failure replies (a result's outputs are written where the run is: requests.cpp). Every
// reply carries the process's working set, so that the runner can restart the host when memory grows.
#pragma once

#include <string>

#include "d3d12_device.h"
#include "server.h"

struct Failure {
    std::string status = "error";  // error, unsupported, device_removed
    std::string stage;             // request, session creation, run, output
    std::string ort_error;         // Fail, NotImplemented, EPFail, ... (ort_api.h error_code_name)
    std::string message;
    std::string placement;         // ONNX Runtime's node placement log, where it was asked for
    std::string hresult;           // device_removed only
};

// ",\"working_set_bytes\":...,\"peak_working_set_bytes\":..." for a reply's header, or "".
std::string memory_fields();
void send_failure(const dmlh::Server& server, const std::string& id, const Failure& f);
// A malformed request: stage "request", status error.
Failure request_error(const std::string& message);
// A lost device: reply, flush and leave at once (as the DirectML harness does; nothing is released first).
[[noreturn]] void device_lost_exit(const dmlh::Server& server, const std::string& id, const std::string& what,
                                   HRESULT reason);
