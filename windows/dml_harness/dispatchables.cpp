// dispatchables.cpp - the compiled operator and the compiled graph (see dispatchables.h).
#include "dispatchables.h"

#include <cstring>
#include <string>

#include "harness.h"

using dmlh::Com;
using dmlh::hr_text;
using dmlh::is_device_loss;
using dmlh::kTypeNames;
using dmlh::level_label;
using dmlh::strf;

static Reply refused(Device& dev, const std::string& call, HRESULT hr) {
    std::string dbg = info_queue_text(dev);
    return Reply::make("refused", call + ": " + hr_text(hr) + (dbg.empty() ? "" : "; debug layer: " + dbg));
}

static bool is_invalid_arg(HRESULT hr) { return (unsigned long)hr == 0x80070057UL; }

// CreateOperator: ok, refused (anything but device loss and out of memory) or the failure.
static Reply create_operator(Harness& h, const DML_OPERATOR_DESC& desc, Com<IDMLOperator>& op, const std::string& what) {
    HRESULT hr = h.dev.dml->CreateOperator(&desc, DMLH_IID(IDMLOperator), op.put());
    if (SUCCEEDED(hr)) return Reply::make("ok", "");
    const std::string call = "IDMLDevice::CreateOperator" + what;
    if (is_device_loss(hr) || (unsigned long)hr == 0x8007000EUL) return failure(h, hr, call);
    return refused(h.dev, call, hr);
}

Reply compile_operator(Harness& h, OpDesc& d, Com<IDMLCompiledOperator>& compiled) {
    Device& dev = h.dev;
    Com<IDMLOperator> op;
    Reply r = create_operator(h, d.op, op, "");
    h.timer.lap(kCreate);
    if (r.status != "ok") return r;
    HRESULT hr = dev.dml->CompileOperator(op.get(), dev.exec_flags, DMLH_IID(IDMLCompiledOperator), compiled.put());
    h.timer.lap(kCompile);
    if (FAILED(hr)) {
        if (is_invalid_arg(hr)) return refused(dev, "IDMLDevice::CompileOperator", hr);
        return failure(h, hr, "IDMLDevice::CompileOperator");
    }
    return Reply::make("ok", "");
}

Reply compile_graph(Harness& h, const OpInfo& info, const dmlh::JValue* params, OpDesc& a, BoundCase& c,
                    Com<IDMLCompiledOperator>& compiled) {
    Device& dev = h.dev;
    const int n_in = info.input_count;
    // Nodes: 0 = the operator on the graph's tensors (A), 1 = its packed copy (B), 2.. = an identity per input,
    // last = the identity from B's output to the edges output. A first: a description DirectML refuses is refused
    // on every path.
    Com<IDMLOperator> ops[5];
    Reply r = create_operator(h, a.op, ops[0], "");
    if (r.status != "ok") return r;
    // ELEMENT_WISE_IDENTITY copies every graph input and the output: each data type must be in its table.
    const unsigned identity = identity_types(dev);
    const Tensor* const tensors[3] = {&c.in[0], n_in > 1 ? &c.in[1] : &c.out, &c.out};
    for (const Tensor* t : tensors)
        if (!(identity & (1u << t->dtype)))
            return Reply::make("unsupported", strf("the graph path copies %s through ELEMENT_WISE_IDENTITY, which does "
                                                   "not support %s at feature level %s on this device",
                                                   t->name.c_str(), kTypeNames[t->dtype],
                                                   level_label(dev.feature_level).c_str()));
    Com<IDMLDevice1> dev1;
    HRESULT hr = dev.dml->QueryInterface(DMLH_IID(IDMLDevice1), dev1.put());
    if (FAILED(hr))
        return Reply::make("unsupported", "the DirectML device has no IDMLDevice1 (CompileGraph): " + hr_text(hr));

    // Copy B's tensors: packed, as intermediate edges are.
    Tensor packed_in[2], packed_out;
    Tensor* packed_ptrs[2] = {&packed_in[0], &packed_in[1]};
    for (int i = 0; i < n_in; i++) packed_copy(c.in[i], packed_in[i]);
    packed_copy(c.out, packed_out);
    OpDesc b;
    Reply bad;
    if (!build_desc(info, params, packed_ptrs, packed_out, b, bad)) return bad;

    r = create_operator(h, b.op, ops[1], " (the packed copy between identity nodes)");
    if (r.status != "ok") return r;
    DML_ELEMENT_WISE_IDENTITY_OPERATOR_DESC id[3];
    DML_OPERATOR_DESC id_op[3];
    for (int i = 0; i <= n_in; i++) {
        const bool last = i == n_in;
        id[i].InputTensor = last ? &packed_out.desc : &c.in[i].desc;
        id[i].OutputTensor = last ? &c.out.desc : &packed_in[i].desc;
        id[i].ScaleBias = nullptr;
        id_op[i] = {DML_OPERATOR_ELEMENT_WISE_IDENTITY, &id[i]};
        r = create_operator(h, id_op[i], ops[2 + i],
                            " (ELEMENT_WISE_IDENTITY " + std::string(last ? "to " + c.out.name + "@edges"
                                                                          : "from " + c.in[i].name) + ")");
        if (r.status != "ok") return r;
    }
    h.timer.lap(kCreate);
    const UINT node_count = UINT(3 + n_in), id_out = UINT(2 + n_in);
    DML_OPERATOR_GRAPH_NODE_DESC node[5];
    DML_GRAPH_NODE_DESC nodes[5];
    static const char* const kNames[5] = {"operator", "operator (edges)", "identity input 0", "identity input 1",
                                          "identity output"};
    for (UINT k = 0; k < node_count; k++) {
        node[k] = {ops[k].get(), k == id_out ? kNames[4] : kNames[k]};
        nodes[k] = {DML_GRAPH_NODE_TYPE_OPERATOR, &node[k]};
    }
    DML_INPUT_GRAPH_EDGE_DESC in_edge[4];
    DML_INTERMEDIATE_GRAPH_EDGE_DESC mid_edge[3];
    DML_OUTPUT_GRAPH_EDGE_DESC out_edge[2];
    DML_GRAPH_EDGE_DESC in_edges[4], mid_edges[3], out_edges[2];
    UINT n_in_edges = 0, n_mid = 0;
    for (int i = 0; i < n_in; i++) {
        in_edge[n_in_edges++] = {UINT(i), 0, UINT(i), c.in[i].name.c_str()};         // input i -> A
        in_edge[n_in_edges++] = {UINT(i), UINT(2 + i), 0, c.in[i].name.c_str()};     // input i -> its identity
        mid_edge[n_mid++] = {UINT(2 + i), 0, 1, UINT(i), "identity -> operator (edges)"};
    }
    mid_edge[n_mid++] = {1, 0, id_out, 0, "operator (edges) -> identity"};
    out_edge[0] = {0, 0, 0, c.out.name.c_str()};
    out_edge[1] = {id_out, 0, 1, "edges"};
    for (UINT k = 0; k < n_in_edges; k++) in_edges[k] = {DML_GRAPH_EDGE_TYPE_INPUT, &in_edge[k]};
    for (UINT k = 0; k < n_mid; k++) mid_edges[k] = {DML_GRAPH_EDGE_TYPE_INTERMEDIATE, &mid_edge[k]};
    for (UINT k = 0; k < 2; k++) out_edges[k] = {DML_GRAPH_EDGE_TYPE_OUTPUT, &out_edge[k]};
    DML_GRAPH_DESC graph;
    memset(&graph, 0, sizeof graph);
    graph.InputCount = UINT(n_in);
    graph.OutputCount = 2;
    graph.NodeCount = node_count;
    graph.Nodes = nodes;
    graph.InputEdgeCount = n_in_edges;
    graph.InputEdges = in_edges;
    graph.OutputEdgeCount = 2;
    graph.OutputEdges = out_edges;
    graph.IntermediateEdgeCount = n_mid;
    graph.IntermediateEdges = mid_edges;
    hr = dev1->CompileGraph(&graph, dev.exec_flags, DMLH_IID(IDMLCompiledOperator), compiled.put());
    h.timer.lap(kCompile);
    if (FAILED(hr)) {
        if (is_invalid_arg(hr)) return refused(dev, "IDMLDevice1::CompileGraph", hr);
        return failure(h, hr, "IDMLDevice1::CompileGraph");
    }
    return Reply::make("ok", "");
}
