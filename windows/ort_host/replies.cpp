// replies.cpp - the host's failure replies (see replies.h).
#include "replies.h"

#include <psapi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "protocol.h"

using dmlh::hr_text;
using dmlh::log_line;
using dmlh::strf;

std::string memory_fields() {
    PROCESS_MEMORY_COUNTERS pmc;
    memset(&pmc, 0, sizeof pmc);
    pmc.cb = sizeof pmc;
    if (!GetProcessMemoryInfo(GetCurrentProcess(), &pmc, sizeof pmc)) return std::string();
    return strf(",\"working_set_bytes\":%llu,\"peak_working_set_bytes\":%llu",
                (unsigned long long)pmc.WorkingSetSize, (unsigned long long)pmc.PeakWorkingSetSize);
}

void send_failure(const dmlh::Server& server, const std::string& id, const Failure& f) {
    std::string h = "{\"type\":\"result\",\"id\":" + dmlh::json_string(id) + ",\"status\":" + dmlh::json_string(f.status) +
                    ",\"message\":" + dmlh::json_string(f.message);
    if (!f.stage.empty()) h += ",\"stage\":" + dmlh::json_string(f.stage);
    if (!f.ort_error.empty()) h += ",\"ort_error\":" + dmlh::json_string(f.ort_error);
    if (!f.placement.empty()) h += ",\"placement\":" + dmlh::json_string(f.placement);
    if (!f.hresult.empty()) h += ",\"hresult\":" + dmlh::json_string(f.hresult);
    h += memory_fields() + "}";
    server.send(h);
}

Failure request_error(const std::string& message) {
    Failure f;
    f.stage = "request";
    f.message = message;
    return f;
}

void device_lost_exit(const dmlh::Server& server, const std::string& id, const std::string& what, HRESULT reason) {
    Failure f;
    f.status = "device_removed";
    f.stage = what;
    f.message = what + "; ID3D12Device::GetDeviceRemovedReason: " + hr_text(reason);
    f.hresult = strf("0x%08lX", (unsigned long)reason);
    send_failure(server, id, f);
    fflush(server.frames);
    log_line("%s: device removed (%s); exiting so that the runner starts a fresh host", id.c_str(), f.message.c_str());
    fflush(stderr);
    TerminateProcess(GetCurrentProcess(), 3);
    _exit(3);
}
