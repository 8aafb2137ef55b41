// util.h - what the project's Windows programs share below the device: logging, text, HRESULT text, COM ownership
// and loading a DLL from beside the program.
#pragma once

#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <windows.h>

#include <cstdio>
#include <string>

namespace dmlh {

// ---------------------------------------------------------------------------------------------
// Text and logging.
// ---------------------------------------------------------------------------------------------
// Every log line starts with this ("dml-harness: " unless the program says otherwise).
extern const char* g_log_prefix;
void log_line(const char* fmt, ...);
std::string strf(const char* fmt, ...);
std::string utf8(const wchar_t* w);
std::wstring widen(const std::string& s);
std::string hr_text(HRESULT hr);   // "E_INVALIDARG (0x80070057)" or "HRESULT 0x........"
bool is_device_loss(HRESULT hr);   // DXGI_ERROR_DEVICE_REMOVED, _HUNG, _RESET, _DRIVER_INTERNAL_ERROR
std::string file_version(const wchar_t* path);  // "1.15.4.0" from the file's VS_FIXEDFILEINFO, or ""
std::string exe_dir();  // the folder of the running program, UTF-8
std::string compiler_name();  // "mingw-w64 g++ 12.2.0", "MSVC 1939"

// The clock of --timings (both programs): QueryPerformanceCounter's ticks and their rate, and the wall clock.
LONGLONG qpc_now();
double qpc_ticks_per_us();
long long unix_us_now();  // microseconds since 1970
// The --timings file opened for appending, "%p" in the pattern replaced by the process id; nullptr (said on stderr:
// no timings) when it cannot be opened.
FILE* open_timings_file(const std::string& pattern);
std::string wine_version();   // wine_get_version() from ntdll under Wine; "" on Windows

// A DLL loaded from the given path, else from beside the program, else from the DLL search path: the first of
// those that loads. A path with a folder is loaded with the altered search path, so that the DLL finds the DLLs
// beside it (onnxruntime.dll its providers and DirectML.dll).
struct LoadedModule {
    HMODULE module = nullptr;
    std::string path;     // where it was loaded from (UTF-8)
    std::string version;  // its file version, or ""
    std::string why;      // when module is null: each place tried and why it failed
};
LoadedModule load_module(const std::string& given_path, const char* file_name);

// Owning pointer for COM objects.
template <class T>
struct Com {
    T* p = nullptr;
    Com() = default;
    Com(const Com&) = delete;
    Com& operator=(const Com&) = delete;
    ~Com() { reset(); }
    void reset() {
        if (p) p->Release();
        p = nullptr;
    }
    T* operator->() const { return p; }
    T* get() const { return p; }
    explicit operator bool() const { return p != nullptr; }
    void** put() {
        reset();
        return reinterpret_cast<void**>(&p);
    }
    T** put_typed() {
        reset();
        return &p;
    }
};

}  // namespace dmlh
