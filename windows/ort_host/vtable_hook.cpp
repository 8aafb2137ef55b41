// vtable_hook.cpp - a COM method replaced in its class's vtable (see vtable_hook.h).
#include "vtable_hook.h"

#include <windows.h>

#include "util.h"

std::string hook_vtable_slot(void* object, int slot, void* replacement, void** original) {
    void** entry = *reinterpret_cast<void***>(object) + slot;
    DWORD old = 0;
    if (!VirtualProtect(entry, sizeof(void*), PAGE_READWRITE, &old))
        return dmlh::strf("VirtualProtect on the vtable: error %lu", GetLastError());
    *original = *entry;
    *entry = replacement;
    DWORD ignored = 0;
    VirtualProtect(entry, sizeof(void*), old, &ignored);
    return std::string();
}
