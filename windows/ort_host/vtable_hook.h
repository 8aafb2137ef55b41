// vtable_hook.h - one method of a COM object's class replaced for the whole process (the descriptor heap and buffer
// pools hook the D3D12 device's; heap_pool.h, buffer_pool.h).
#pragma once

#include <string>

// Puts `replacement` in slot `slot` of `object`'s vtable, shared by every object of its class, and the entry it
// replaces in *original; "" or why it could not (the vtable's page could not be made writable).
std::string hook_vtable_slot(void* object, int slot, void* replacement, void** original);

// hook_vtable_slot once per process: `*original` set means the slot is already hooked ("" then).
template <typename Fn>
std::string hook_vtable_slot_once(void* object, int slot, Fn replacement, Fn* original) {
    if (*original) return std::string();
    void* old = nullptr;
    std::string why = hook_vtable_slot(object, slot, reinterpret_cast<void*>(replacement), &old);
    if (why.empty()) *original = reinterpret_cast<Fn>(old);
    return why;
}
