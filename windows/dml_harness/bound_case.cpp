// bound_case.cpp - decoding a run request with buffers (see bound_case.h).
#include "bound_case.h"

#include <cstring>

using dmlh::JValue;
using dmlh::strf;

const char* path_name(ExecPath p) {
    switch (p) {
    case ExecPath::Graph: return "graph";
    case ExecPath::InPlace: return "in-place";
    default: return "operator";
    }
}

static const uint64_t kAlignment = DML_MINIMUM_BUFFER_TENSOR_ALIGNMENT;  // 16
static const long long kMaxBytes = 1LL << 40;  // far above anything the payload (2^36) can hold

static bool error(Reply& bad, const std::string& message) {
    bad = Reply::make("error", message);
    return false;
}

// A non-negative integer field of a tensor entry.
static bool bytes_field(const JValue& entry, const std::string& tensor, const char* key, uint64_t& out, Reply& bad) {
    const JValue* v = entry.get(key);
    if (!v) return error(bad, strf("%s: the entry lacks %s", tensor.c_str(), key));
    if (!v->is_int || v->inum < 0 || v->inum > kMaxBytes)
        return error(bad, strf("%s.%s must be a non-negative integer (bytes)", tensor.c_str(), key));
    out = uint64_t(v->inum);
    return true;
}

// The image of a buffer: offset and nbytes into the payload; nbytes a multiple of 16 holding the binding.
static bool read_image(const JValue& entry, const std::string& name, const std::vector<uint8_t>& payload,
                       uint64_t binding_end, BufferImage& image, Reply& bad) {
    uint64_t offset = 0, nbytes = 0;
    if (!bytes_field(entry, name, "offset", offset, bad) || !bytes_field(entry, name, "nbytes", nbytes, bad))
        return false;
    if (nbytes % kAlignment)
        return error(bad, strf("%s.nbytes %llu is not a multiple of %llu (a buffer image is whole buffer)",
                               name.c_str(), (unsigned long long)nbytes, (unsigned long long)kAlignment));
    if (nbytes < binding_end)
        return error(bad, strf("%s.nbytes %llu is below BindingOffset + TotalTensorSizeInBytes = %llu: the binding "
                               "would end past the buffer", name.c_str(), (unsigned long long)nbytes,
                               (unsigned long long)binding_end));
    if (offset > payload.size() || nbytes > payload.size() - offset)
        return error(bad, strf("%s: offset %llu + nbytes %llu lie outside the %llu-byte payload", name.c_str(),
                               (unsigned long long)offset, (unsigned long long)nbytes,
                               (unsigned long long)payload.size()));
    image.name = name;
    image.data = payload.data() + offset;
    image.nbytes = nbytes;
    return true;
}

// A tensor entry with its layout: read_tensor's fields, then Strides, TotalTensorSizeInBytes and BindingOffset
// into t's DML_BUFFER_TENSOR_DESC and binding offset. `alias` is set from the entry's "alias" (outputs only).
static bool read_layout(const JValue& entry, const std::vector<uint8_t>& payload, bool output, Tensor& t,
                        std::string& alias, Reply& bad) {
    if (entry.type != JValue::Object) return error(bad, "a tensor entry must be an object");
    if (!read_tensor(entry, payload, false, t, bad)) return false;
    const JValue* strides = entry.get("Strides");
    t.strides.clear();
    if (strides) {
        if (strides->type != JValue::Array)
            return error(bad, t.name + ".Strides must be an array of integers (elements)");
        if (strides->items.size() != t.sizes.size())
            return error(bad, strf("%s.Strides has %u entries; DimensionCount (the length of Sizes) is %u",
                                   t.name.c_str(), unsigned(strides->items.size()), unsigned(t.sizes.size())));
        for (const JValue& s : strides->items) {
            if (!s.is_int || s.inum < 0 || s.inum > 0xFFFFFFFFLL)
                return error(bad, t.name + ".Strides must hold integers from 0 to 4294967295 (UINT elements)");
            t.strides.push_back(UINT(s.inum));
        }
    }
    uint64_t total = 0;
    if (!bytes_field(entry, t.name, "TotalTensorSizeInBytes", total, bad) ||
        !bytes_field(entry, t.name, "BindingOffset", t.binding_offset, bad))
        return false;
    if (t.binding_offset % kAlignment)
        return error(bad, strf("%s.BindingOffset %llu is not a multiple of %llu (DML_MINIMUM_BUFFER_TENSOR_ALIGNMENT)",
                               t.name.c_str(), (unsigned long long)t.binding_offset,
                               (unsigned long long)kAlignment));
    t.buffer.Strides = t.strides.empty() ? nullptr : t.strides.data();
    t.buffer.TotalTensorSizeInBytes = total;
    alias.clear();
    const JValue* a = entry.get("alias");
    if (a) {
        if (!output) return error(bad, t.name + ": only an output may have an alias");
        if (!a->c_str()) return error(bad, t.name + ".alias must be the name of an input");
        if (entry.get("offset") || entry.get("nbytes"))
            return error(bad, t.name + ": an output with an alias has no image of its own (no offset, nbytes)");
        alias = a->str;
    }
    return true;
}

static const JValue* find_named(const JValue* list, const std::string& name) {
    for (const JValue& e : list->items) {
        const JValue* n = e.get("name");
        if (n && n->c_str() && n->str == name) return &e;
    }
    return nullptr;
}

bool read_bound_case(const OpInfo& info, const JValue& h, const std::vector<uint8_t>& payload, BoundCase& c,
                     Reply& bad) {
    const JValue* buffers = h.get("buffers");
    if (!buffers || buffers->type != JValue::Bool || buffers->num == 0)
        return error(bad, "buffers must be true (omit it for packed tensors)");
    const JValue* path = h.get("path");
    if (!path || !path->c_str()) return error(bad, "a request with buffers needs path: operator, graph or in-place");
    if (path->str == "operator") c.path = ExecPath::Operator;
    else if (path->str == "graph") c.path = ExecPath::Graph;
    else if (path->str == "in-place") c.path = ExecPath::InPlace;
    else return error(bad, "path must be operator, graph or in-place, not " + path->str);
    const JValue* inputs = h.get("inputs");
    const JValue* outputs = h.get("outputs");
    if (!inputs || inputs->type != JValue::Array || !outputs || outputs->type != JValue::Array)
        return error(bad, "run request needs 'inputs' and 'outputs' arrays");
    std::string alias;
    for (int i = 0; i < info.input_count; i++) {
        const JValue* e = find_named(inputs, info.inputs[i]);
        if (!e) return error(bad, strf("request lacks input %s of %s", info.inputs[i], info.name));
        if (!read_layout(*e, payload, false, c.in[i], alias, bad)) return false;
        BufferImage image;
        if (!read_image(*e, c.in[i].name, payload, c.in[i].binding_offset + c.in[i].buffer.TotalTensorSizeInBytes,
                        image, bad))
            return false;
        c.in_image[i] = int(c.images.size());
        c.images.push_back(image);
    }
    const JValue* e = find_named(outputs, "OutputGradientTensor");
    if (!e) return error(bad, strf("request lacks output OutputGradientTensor of %s", info.name));
    if (!read_layout(*e, payload, true, c.out, alias, bad)) return false;
    const uint64_t out_end = c.out.binding_offset + c.out.buffer.TotalTensorSizeInBytes;
    if (!alias.empty()) {
        if (c.path != ExecPath::InPlace)
            return error(bad, c.out.name + ".alias: an output shares an input's buffer on the in-place path only");
        for (int i = 0; i < info.input_count; i++)
            if (c.in[i].name == alias) c.out_alias = i;
        if (c.out_alias < 0) return error(bad, c.out.name + ".alias names " + alias + ", which is no input of " +
                                                   info.name);
        const Tensor& a = c.in[c.out_alias];
        if (c.out.binding_offset != a.binding_offset)
            return error(bad, strf("%s.BindingOffset %llu differs from %s's %llu: an alias is bound to exactly the "
                                   "input's buffer, offset and size", c.out.name.c_str(),
                                   (unsigned long long)c.out.binding_offset, a.name.c_str(),
                                   (unsigned long long)a.binding_offset));
        if (c.out.buffer.TotalTensorSizeInBytes != a.buffer.TotalTensorSizeInBytes)
            return error(bad, strf("%s.TotalTensorSizeInBytes %llu differs from %s's %llu: an alias is bound to "
                                   "exactly the input's buffer, offset and size", c.out.name.c_str(),
                                   (unsigned long long)c.out.buffer.TotalTensorSizeInBytes, a.name.c_str(),
                                   (unsigned long long)a.buffer.TotalTensorSizeInBytes));
        c.out_image = c.in_image[c.out_alias];
    } else {
        if (c.path == ExecPath::InPlace)
            return error(bad, c.out.name + ": the in-place path needs an output with alias naming an input");
        BufferImage image;
        if (!read_image(*e, c.out.name, payload, out_end, image, bad)) return false;
        c.out_image = int(c.images.size());
        c.images.push_back(image);
    }
    const JValue* edges = h.get("edges");
    if (c.path != ExecPath::Graph) {
        if (edges) return error(bad, "edges: only the graph path has edge copies");
        return true;
    }
    if (!edges || edges->type != JValue::Array)
        return error(bad, "edges: the graph path needs an array with one entry per output");
    const std::string name = c.out.name + "@edges";
    if (edges->items.size() != 1) return error(bad, "edges must hold exactly one entry per output: " + name);
    const JValue& edge = edges->items[0];
    const JValue* n = edge.type == JValue::Object ? edge.get("name") : nullptr;
    if (!n || !n->c_str() || n->str != name) return error(bad, "edges[0].name must be " + name);
    BufferImage image;
    if (!read_image(edge, name, payload, out_end, image, bad)) return false;
    c.edges_image = int(c.images.size());
    c.images.push_back(image);
    return true;
}
