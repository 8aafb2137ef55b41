// util.cpp - logging, text and DLL loading the project's Windows programs share (see util.h).
#include "util.h"

#include <winver.h>

#include <cstdarg>
#include <cstdio>
#include <vector>

namespace dmlh {

const char* g_log_prefix = "dml-harness: ";

void log_line(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs(g_log_prefix, stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    fflush(stderr);
    va_end(ap);
}

std::string strf(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int need = vsnprintf(nullptr, 0, fmt, ap);
    va_end(ap);
    std::string s(size_t(need > 0 ? need : 0), '\0');
    va_start(ap, fmt);
    vsnprintf(&s[0], s.size() + 1, fmt, ap);
    va_end(ap);
    return s;
}

std::string utf8(const wchar_t* w) {
    int n = WideCharToMultiByte(CP_UTF8, 0, w, -1, nullptr, 0, nullptr, nullptr);
    if (n <= 1) return std::string();
    std::string s(size_t(n - 1), '\0');
    WideCharToMultiByte(CP_UTF8, 0, w, -1, &s[0], n, nullptr, nullptr);
    return s;
}

std::wstring widen(const std::string& s) {
    int n = MultiByteToWideChar(CP_UTF8, 0, s.c_str(), -1, nullptr, 0);
    if (n <= 0) return std::wstring();
    std::wstring w(size_t(n - 1), L'\0');
    MultiByteToWideChar(CP_UTF8, 0, s.c_str(), -1, &w[0], n);
    return w;
}

static const char* hr_name(HRESULT hr) {
    switch ((unsigned long)hr) {
    case 0x00000000UL: return "S_OK";
    case 0x00000001UL: return "S_FALSE";
    case 0x80070057UL: return "E_INVALIDARG";
    case 0x8007000EUL: return "E_OUTOFMEMORY";
    case 0x80004001UL: return "E_NOTIMPL";
    case 0x80004002UL: return "E_NOINTERFACE";
    case 0x80004003UL: return "E_POINTER";
    case 0x80004005UL: return "E_FAIL";
    case 0x8000FFFFUL: return "E_UNEXPECTED";
    case 0x80070005UL: return "E_ACCESSDENIED";
    case 0x8007007EUL: return "ERROR_MOD_NOT_FOUND";
    case 0x887A0001UL: return "DXGI_ERROR_INVALID_CALL";
    case 0x887A0002UL: return "DXGI_ERROR_NOT_FOUND";
    case 0x887A0004UL: return "DXGI_ERROR_UNSUPPORTED";
    case 0x887A0005UL: return "DXGI_ERROR_DEVICE_REMOVED";
    case 0x887A0006UL: return "DXGI_ERROR_DEVICE_HUNG";
    case 0x887A0007UL: return "DXGI_ERROR_DEVICE_RESET";
    case 0x887A0020UL: return "DXGI_ERROR_DRIVER_INTERNAL_ERROR";
    case 0x887A002DUL: return "DXGI_ERROR_SDK_COMPONENT_MISSING";
    case 0x887E0003UL: return "D3D12_ERROR_INVALID_REDIST";
    default: return nullptr;
    }
}

std::string hr_text(HRESULT hr) {
    const char* name = hr_name(hr);
    return name ? strf("%s (0x%08lX)", name, (unsigned long)hr) : strf("HRESULT 0x%08lX", (unsigned long)hr);
}

bool is_device_loss(HRESULT hr) {
    switch ((unsigned long)hr) {
    case 0x887A0005UL: case 0x887A0006UL: case 0x887A0007UL: case 0x887A0020UL: return true;
    default: return false;
    }
}

std::string file_version(const wchar_t* path) {
    DWORD handle = 0, size = GetFileVersionInfoSizeW(path, &handle);
    if (!size) return std::string();
    std::vector<unsigned char> block(size);
    VS_FIXEDFILEINFO* info = nullptr;
    UINT len = 0;
    if (!GetFileVersionInfoW(path, 0, size, block.data()) ||
        !VerQueryValueW(block.data(), L"\\", reinterpret_cast<void**>(&info), &len) || !info || len < sizeof *info)
        return std::string();
    return strf("%u.%u.%u.%u", HIWORD(info->dwFileVersionMS), LOWORD(info->dwFileVersionMS),
                HIWORD(info->dwFileVersionLS), LOWORD(info->dwFileVersionLS));
}

std::string exe_dir() {
    wchar_t path[MAX_PATH * 2];
    DWORD n = GetModuleFileNameW(nullptr, path, DWORD(sizeof path / sizeof path[0]));
    if (!n || n >= sizeof path / sizeof path[0]) return std::string();
    std::wstring w(path, n);
    size_t slash = w.find_last_of(L"\\/");
    return slash == std::wstring::npos ? std::string() : utf8(w.substr(0, slash).c_str());
}

std::string compiler_name() {
#if defined(__MINGW32__)
    return strf("mingw-w64 g++ %d.%d.%d", __GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__);
#elif defined(_MSC_VER)
    return strf("MSVC %d", _MSC_VER);
#else
    return std::string();
#endif
}

std::string wine_version() {
    typedef const char*(CDECL * WineGetVersion)(void);
    HMODULE ntdll = GetModuleHandleW(L"ntdll.dll");
    auto get = ntdll ? reinterpret_cast<WineGetVersion>(reinterpret_cast<void*>(GetProcAddress(ntdll, "wine_get_version")))
                     : nullptr;
    return get ? std::string(get()) : std::string();
}

LoadedModule load_module(const std::string& given_path, const char* file_name) {
    std::vector<std::string> tries;
    if (!given_path.empty()) tries.push_back(given_path);
    else {
        std::string dir = exe_dir();
        if (!dir.empty()) tries.push_back(dir + "\\" + file_name);
        tries.push_back(file_name);
    }
    LoadedModule loaded;
    for (const std::string& t : tries) {
        std::wstring w = widen(t);
        bool has_dir = t.find_first_of("\\/") != std::string::npos;
        if (has_dir && GetFileAttributesW(w.c_str()) == INVALID_FILE_ATTRIBUTES) {
            loaded.why += strf("%s%s: not found", loaded.why.empty() ? "" : "; ", t.c_str());
            continue;
        }
        HMODULE m = has_dir ? LoadLibraryExW(w.c_str(), nullptr, LOAD_WITH_ALTERED_SEARCH_PATH) : LoadLibraryW(w.c_str());
        if (!m) {
            loaded.why += strf("%s%s: LoadLibrary error %lu", loaded.why.empty() ? "" : "; ", t.c_str(), GetLastError());
            continue;
        }
        loaded.module = m;
        wchar_t path[MAX_PATH * 2];
        DWORD n = GetModuleFileNameW(m, path, DWORD(sizeof path / sizeof path[0]));
        if (n && n < sizeof path / sizeof path[0]) {
            loaded.path = utf8(path);
            loaded.version = file_version(path);
        } else {
            loaded.path = t;
        }
        return loaded;
    }
    return loaded;
}

FILE* open_timings_file(const std::string& pattern) {
    std::string path = pattern;
    size_t at = path.find("%p");
    if (at != std::string::npos) path.replace(at, 2, strf("%lu", (unsigned long)GetCurrentProcessId()));
    FILE* file = fopen(path.c_str(), "ab");
    if (!file) log_line("--timings: cannot open %s for appending; no timings", path.c_str());
    return file;
}

LONGLONG qpc_now() {
    LARGE_INTEGER t;
    QueryPerformanceCounter(&t);
    return t.QuadPart;
}

double qpc_ticks_per_us() {
    LARGE_INTEGER f;
    QueryPerformanceFrequency(&f);
    return double(f.QuadPart) / 1e6;
}

long long unix_us_now() {
    FILETIME ft;
    GetSystemTimeAsFileTime(&ft);  // 100 ns since 1601
    long long t100 = (long long)(((unsigned long long)ft.dwHighDateTime << 32) | ft.dwLowDateTime);
    return (t100 - 116444736000000000LL) / 10;
}

}  // namespace dmlh
