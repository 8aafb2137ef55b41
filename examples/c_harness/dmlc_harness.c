/*
 * dmlc_harness.c - a minimal native harness for dmlconform, in plain C99.
 *
 * It speaks the protocol of docs/native-harness.md on stdin/stdout and implements
 * ACTIVATION_RELU_GRAD (FLOAT32) and SLICE_GRAD (all eleven data types: it only moves bytes)
 * on the CPU. Everything else is answered "unsupported". It exists to prove the protocol can be
 * served from native code with nothing but the C library; a DirectML harness has the same
 * skeleton with the two compute functions replaced by IDMLDevice::CreateOperator & co.
 *
 * Build:  cc -std=c99 -O2 -Wall -Wextra -o dmlc_harness dmlc_harness.c
 * Run:    dmlconform run --backend native --harness "./dmlc_harness [--feature-level 6_4]"
 *
 * stdout carries only frames; diagnostics go to stderr.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _WIN32
#include <fcntl.h>
#include <io.h>
#endif

#define PROTOCOL_VERSION 1
#define MAX_RANK 8
/* Arrays on the wire may be longer than DirectML allows, so such cases can be refused, not misread. */
#define MAX_WIRE_DIMS 32
#define MAX_HEADER (16u * 1024u * 1024u)

/* ---------------------------------------------------------------------------------------------
 * Minimal JSON: enough for what the runner sends (objects, arrays, strings, numbers, literals).
 * ------------------------------------------------------------------------------------------- */
typedef enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } jtype;

typedef struct jnode {
    jtype type;
    double num;          /* J_NUM, J_BOOL */
    long long inum;      /* J_NUM: exact value when the text is an integer */
    int is_int;
    char *str;           /* J_STR: decoded, NUL-terminated */
    char *key;           /* member name when inside an object */
    struct jnode *child; /* first element / member */
    struct jnode *next;  /* next sibling */
    size_t count;        /* elements / members */
} jnode;

typedef struct { const char *p; const char *end; int failed; } jparser;

static void jfree(jnode *n) {
    while (n) {
        jnode *next = n->next;
        jfree(n->child);
        free(n->str);
        free(n->key);
        free(n);
        n = next;
    }
}

static void skip_ws(jparser *ps) {
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')) ps->p++;
}

static void put_utf8(char **out, unsigned cp) {
    char *o = *out;
    if (cp < 0x80) { *o++ = (char)cp; }
    else if (cp < 0x800) { *o++ = (char)(0xC0 | (cp >> 6)); *o++ = (char)(0x80 | (cp & 0x3F)); }
    else { *o++ = (char)(0xE0 | (cp >> 12)); *o++ = (char)(0x80 | ((cp >> 6) & 0x3F)); *o++ = (char)(0x80 | (cp & 0x3F)); }
    *out = o;
}

static char *parse_string(jparser *ps) {
    /* Decoded text is never longer than its escaped form, so one allocation of that size is enough. */
    const char *start = ++ps->p;
    const char *q = start;
    while (q < ps->end && *q != '"') q += (*q == '\\') ? 2 : 1;
    if (q >= ps->end) { ps->failed = 1; return NULL; }
    char *out = malloc((size_t)(q - start) + 1), *o = out;
    if (!out) { ps->failed = 1; return NULL; }
    while (ps->p < q) {
        char c = *ps->p++;
        if (c != '\\') { *o++ = c; continue; }
        c = *ps->p++;
        switch (c) {
        case 'n': *o++ = '\n'; break;
        case 't': *o++ = '\t'; break;
        case 'r': *o++ = '\r'; break;
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'u': {
            unsigned cp = 0;
            for (int i = 0; i < 4; i++) {
                char h = ps->p < q ? *ps->p++ : '0';
                cp = cp * 16 + (unsigned)((h >= '0' && h <= '9') ? h - '0' : (h | 0x20) - 'a' + 10);
            }
            put_utf8(&o, cp); /* surrogate pairs are not decoded: the runner sends ASCII only */
            break;
        }
        default: *o++ = c; /* \" \\ \/ */
        }
    }
    *o = '\0';
    ps->p = q + 1;
    return out;
}

static jnode *parse_value(jparser *ps, int depth);

static jnode *new_node(jparser *ps, jtype type) {
    jnode *n = calloc(1, sizeof *n);
    if (!n) ps->failed = 1;
    else n->type = type;
    return n;
}

static jnode *parse_container(jparser *ps, int depth, int is_object) {
    jnode *n = new_node(ps, is_object ? J_OBJ : J_ARR), **tail;
    if (!n) return NULL;
    tail = &n->child;
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == (is_object ? '}' : ']')) { ps->p++; return n; }
    for (;;) {
        char *key = NULL;
        skip_ws(ps);
        if (is_object) {
            if (ps->p >= ps->end || *ps->p != '"' || !(key = parse_string(ps))) { ps->failed = 1; break; }
            skip_ws(ps);
            if (ps->p >= ps->end || *ps->p++ != ':') { free(key); ps->failed = 1; break; }
        }
        jnode *item = parse_value(ps, depth + 1);
        if (!item) { free(key); ps->failed = 1; break; }
        item->key = key;
        *tail = item;
        tail = &item->next;
        n->count++;
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') { ps->p++; continue; }
        if (ps->p < ps->end && *ps->p == (is_object ? '}' : ']')) { ps->p++; return n; }
        ps->failed = 1;
        break;
    }
    jfree(n);
    return NULL;
}

static jnode *parse_value(jparser *ps, int depth) {
    skip_ws(ps);
    if (ps->p >= ps->end || depth > 64) { ps->failed = 1; return NULL; }
    char c = *ps->p;
    if (c == '{' || c == '[') return parse_container(ps, depth, c == '{');
    if (c == '"') {
        jnode *n = new_node(ps, J_STR);
        if (n && !(n->str = parse_string(ps))) { free(n); return NULL; }
        return n;
    }
    static const struct { const char *word; jtype type; double value; } words[] = {
        {"true", J_BOOL, 1}, {"false", J_BOOL, 0}, {"null", J_NULL, 0}};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        size_t len = strlen(words[i].word);
        if ((size_t)(ps->end - ps->p) >= len && memcmp(ps->p, words[i].word, len) == 0) {
            jnode *n = new_node(ps, words[i].type);
            if (n) n->num = words[i].value;
            ps->p += len;
            return n;
        }
    }
    /* A number: copy it out so strtod/strtoll cannot run past the header. */
    char text[64];
    size_t len = 0;
    while (ps->p + len < ps->end && len < sizeof text - 1 && strchr("+-0123456789.eE", ps->p[len])) len++;
    if (len == 0) { ps->failed = 1; return NULL; }
    memcpy(text, ps->p, len);
    text[len] = '\0';
    ps->p += len;
    jnode *n = new_node(ps, J_NUM);
    if (!n) return NULL;
    n->num = strtod(text, NULL);
    n->is_int = strpbrk(text, ".eE") == NULL;
    if (n->is_int) n->inum = strtoll(text, NULL, 10);
    return n;
}

static jnode *json_parse(const char *text, size_t len) {
    jparser ps = {text, text + len, 0};
    jnode *root = parse_value(&ps, 0);
    skip_ws(&ps);
    if (ps.failed || ps.p != ps.end) { jfree(root); return NULL; }
    return root;
}

static jnode *jget(const jnode *obj, const char *key) {
    if (!obj || obj->type != J_OBJ) return NULL;
    for (jnode *m = obj->child; m; m = m->next)
        if (strcmp(m->key, key) == 0) return m;
    return NULL;
}

static const char *jstr(const jnode *n) { return n && n->type == J_STR ? n->str : NULL; }

/* Integer array of at most MAX_WIRE_DIMS elements; returns the count or -1. */
static int jints(const jnode *arr, long long *out) {
    int n = 0;
    if (!arr || arr->type != J_ARR || arr->count > MAX_WIRE_DIMS) return -1;
    for (jnode *e = arr->child; e; e = e->next) {
        if (e->type != J_NUM || !e->is_int) return -1;
        out[n++] = e->inum;
    }
    return n;
}

/* ---------------------------------------------------------------------------------------------
 * Frames: "DMLC", uint32 header length, uint64 payload length (little-endian), JSON, payload.
 * ------------------------------------------------------------------------------------------- */
typedef struct { char *buf; size_t len, cap; } sbuf;

static void sb_grow(sbuf *s, size_t extra) {
    if (s->len + extra + 1 <= s->cap) return;
    size_t cap = s->cap ? s->cap : 256;
    while (cap < s->len + extra + 1) cap *= 2;
    char *buf = realloc(s->buf, cap);
    if (!buf) { fprintf(stderr, "c-harness: out of memory\n"); exit(70); }
    s->buf = buf;
    s->cap = cap;
}

static void sb_printf(sbuf *s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int need = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    sb_grow(s, (size_t)need);
    va_start(ap, fmt);
    vsnprintf(s->buf + s->len, s->cap - s->len, fmt, ap);
    va_end(ap);
    s->len += (size_t)need;
}

static void sb_json_string(sbuf *s, const char *text) {
    sb_printf(s, "\"");
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        if (*c == '"' || *c == '\\') sb_printf(s, "\\%c", *c);
        else if (*c < 0x20 || *c >= 0x7F) sb_printf(s, "\\u%04x", *c);
        else sb_printf(s, "%c", *c);
    }
    sb_printf(s, "\"");
}

static int read_exact(void *dst, size_t n) {
    size_t got = fread(dst, 1, n, stdin);
    return got == n;
}

static void put_le(unsigned char *p, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le(const unsigned char *p, int bytes) {
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static void write_frame(const sbuf *header, const void *payload, uint64_t payload_len) {
    unsigned char prefix[16];
    memcpy(prefix, "DMLC", 4);
    put_le(prefix + 4, header->len, 4);
    put_le(prefix + 8, payload_len, 8);
    if (fwrite(prefix, 1, 16, stdout) != 16 || fwrite(header->buf, 1, header->len, stdout) != header->len ||
        (payload_len && fwrite(payload, 1, (size_t)payload_len, stdout) != payload_len) || fflush(stdout) != 0) {
        fprintf(stderr, "c-harness: cannot write to stdout (%s)\n", strerror(errno));
        exit(0); /* the runner went away */
    }
}

/* Reads one frame; returns 0 at a clean end of stream, -1 on a broken frame, 1 on success. */
static int read_frame(jnode **header, unsigned char **payload, uint64_t *payload_len) {
    unsigned char prefix[16];
    size_t got = fread(prefix, 1, 16, stdin);
    if (got == 0) return 0;
    if (got != 16 || memcmp(prefix, "DMLC", 4) != 0) return -1;
    uint64_t header_len = get_le(prefix + 4, 4);
    *payload_len = get_le(prefix + 8, 8);
    if (header_len == 0 || header_len > MAX_HEADER || *payload_len > ((uint64_t)1 << 36)) return -1;
    char *text = malloc((size_t)header_len);
    *payload = malloc(*payload_len ? (size_t)*payload_len : 1);
    if (!text || !*payload || !read_exact(text, (size_t)header_len) ||
        (*payload_len && !read_exact(*payload, (size_t)*payload_len))) {
        free(text);
        free(*payload);
        return -1;
    }
    *header = json_parse(text, (size_t)header_len);
    free(text);
    if (!*header) { free(*payload); return -1; }
    return 1;
}

/* ---------------------------------------------------------------------------------------------
 * Tensors and replies.
 * ------------------------------------------------------------------------------------------- */
enum { FLOAT32 = 1, FLOAT16, UINT32, UINT16, UINT8, INT32, INT16, INT8, FLOAT64, UINT64, INT64 };
static const char *const DTYPE_NAMES[] = {"UNKNOWN", "FLOAT32", "FLOAT16", "UINT32", "UINT16", "UINT8",
                                          "INT32", "INT16", "INT8", "FLOAT64", "UINT64", "INT64"};
static const int DTYPE_BYTES[] = {0, 4, 2, 4, 2, 1, 4, 2, 1, 8, 8, 8};

typedef struct {
    const char *name;
    int dtype;
    int rank;
    long long sizes[MAX_WIRE_DIMS];
    const unsigned char *data; /* inputs only */
    uint64_t nbytes;
} tensor;

static uint64_t element_count(const tensor *t) {
    uint64_t n = 1;
    for (int i = 0; i < t->rank; i++) n *= (uint64_t)t->sizes[i];
    return n;
}

/* Fills t from a header entry; returns an error message or NULL. */
static const char *read_tensor(const jnode *entry, const unsigned char *payload, uint64_t payload_len, int with_data,
                               tensor *t) {
    const jnode *type = jget(entry, "DataType"), *offset = jget(entry, "offset"), *nbytes = jget(entry, "nbytes");
    t->name = jstr(jget(entry, "name"));
    if (!t->name || !type || !type->is_int || type->inum < 1 || type->inum > 11) return "bad tensor name or DataType";
    t->dtype = (int)type->inum;
    t->rank = jints(jget(entry, "Sizes"), t->sizes);
    if (t->rank < 0) return "bad Sizes";
    for (int i = 0; i < t->rank; i++)
        if (t->sizes[i] < 0 || t->sizes[i] > 0xFFFFFFFFLL) return "Sizes out of range";
    if (!with_data) return NULL;
    if (!offset || !nbytes || !offset->is_int || !nbytes->is_int || offset->inum < 0 || nbytes->inum < 0) return "bad offset/nbytes";
    t->nbytes = (uint64_t)nbytes->inum;
    if ((uint64_t)offset->inum + t->nbytes > payload_len) return "tensor bytes outside the payload";
    if (t->nbytes != element_count(t) * (uint64_t)DTYPE_BYTES[t->dtype]) return "nbytes disagrees with DataType x Sizes";
    t->data = payload + offset->inum;
    return NULL;
}

static const jnode *find_tensor(const jnode *list, const char *name) {
    if (!list || list->type != J_ARR) return NULL;
    for (const jnode *e = list->child; e; e = e->next)
        if (jstr(jget(e, "name")) && strcmp(jstr(jget(e, "name")), name) == 0) return e;
    return NULL;
}

static void reply_status(const char *id, const char *status, const char *fmt, ...) {
    char message[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    sbuf h = {0};
    sb_printf(&h, "{\"type\":\"result\",\"id\":");
    sb_json_string(&h, id);
    sb_printf(&h, ",\"status\":\"%s\",\"message\":", status);
    sb_json_string(&h, message);
    sb_printf(&h, "}");
    write_frame(&h, NULL, 0);
    free(h.buf);
}

static void reply_ok(const char *id, const tensor *out, const void *data) {
    sbuf h = {0};
    sb_printf(&h, "{\"type\":\"result\",\"id\":");
    sb_json_string(&h, id);
    sb_printf(&h, ",\"status\":\"ok\",\"outputs\":[{\"name\":\"%s\",\"DataType\":%d,\"Sizes\":[", out->name, out->dtype);
    for (int i = 0; i < out->rank; i++) sb_printf(&h, "%s%lld", i ? "," : "", out->sizes[i]);
    sb_printf(&h, "],\"offset\":0,\"nbytes\":%llu}]}", (unsigned long long)out->nbytes);
    write_frame(&h, data, out->nbytes);
    free(h.buf);
}

/* ---------------------------------------------------------------------------------------------
 * Operators. Each validates the description as DirectML would (refused), then declines what this
 * harness does not implement (unsupported), then computes.
 * ------------------------------------------------------------------------------------------- */
static int same_desc(const tensor *a, const tensor *b, int compare_sizes) {
    if (a->dtype != b->dtype || a->rank != b->rank) return 0;
    for (int i = 0; compare_sizes && i < a->rank; i++)
        if (a->sizes[i] != b->sizes[i]) return 0;
    return 1;
}

static const char *check_shape(const tensor *t) {
    if (t->rank < 1 || t->rank > MAX_RANK) return "DimensionCount must be 1 to 8";
    for (int i = 0; i < t->rank; i++)
        if (t->sizes[i] < 1) return "Sizes must be at least 1";
    return NULL;
}

static void relu_grad(const char *id, const tensor *x, const tensor *dy, tensor *dx) {
    const char *bad = check_shape(x);
    if (!bad) bad = check_shape(dx);
    if (bad) { reply_status(id, "refused", "%s", bad); return; }
    if (!same_desc(x, dy, 1) || !same_desc(x, dx, 1)) {
        reply_status(id, "refused", "InputTensor, InputGradientTensor and OutputGradientTensor must have the same "
                     "DataType and Sizes");
        return;
    }
    int t = x->dtype;
    if (t != FLOAT32 && t != FLOAT16 && t != INT32 && t != INT16 && t != INT8) {
        reply_status(id, "refused", "%s is not a data type of ACTIVATION_RELU_GRAD", DTYPE_NAMES[t]);
        return;
    }
    if (t != FLOAT32) { reply_status(id, "unsupported", "this harness implements ReluGrad in FLOAT32 only"); return; }
    uint64_t n = element_count(x);
    dx->nbytes = n * 4;
    uint32_t *out = malloc(n ? (size_t)dx->nbytes : 1);
    if (!out) { reply_status(id, "error", "out of memory"); return; }
    for (uint64_t i = 0; i < n; i++) {
        float xv;
        uint32_t g;
        memcpy(&xv, x->data + 4 * i, 4);
        memcpy(&g, dy->data + 4 * i, 4); /* copy bits: NaN payloads and -0.0 pass unchanged */
        out[i] = xv > 0.0f ? g : 0u;     /* NaN > 0 is false: NaN in X gives +0 */
    }
    reply_ok(id, dx, out);
    free(out);
}

static void slice_grad(const char *id, const jnode *params, const tensor *dy, tensor *dx) {
    long long offsets[MAX_WIRE_DIMS], sizes[MAX_WIRE_DIMS], strides[MAX_WIRE_DIMS];
    const char *bad = check_shape(dy);
    if (!bad) bad = check_shape(dx);
    if (bad) { reply_status(id, "refused", "%s", bad); return; }
    if (!same_desc(dy, dx, 0)) {
        reply_status(id, "refused", "InputGradientTensor and OutputGradientTensor must have the same DataType and "
                     "DimensionCount");
        return;
    }
    const jnode *count = jget(params, "DimensionCount");
    int n_off = jints(jget(params, "InputWindowOffsets"), offsets);
    int n_size = jints(jget(params, "InputWindowSizes"), sizes);
    int n_stride = jints(jget(params, "InputWindowStrides"), strides);
    if (!count || !count->is_int || n_off < 0 || n_size < 0 || n_stride < 0) {
        reply_status(id, "error", "SLICE_GRAD needs DimensionCount and three integer arrays");
        return;
    }
    /* DirectML reads DimensionCount elements from each array: a mismatch would read out of bounds. */
    if (n_off != count->inum || n_size != count->inum || n_stride != count->inum || count->inum != dx->rank) {
        reply_status(id, "refused", "DimensionCount %lld must equal every window array's length and the tensors' "
                     "DimensionCount %d", count->inum, dx->rank);
        return;
    }
    for (int i = 0; i < dx->rank; i++) {
        long long reach;
        if (strides[i] == 0) { reply_status(id, "refused", "InputWindowStrides[%d] must not be 0", i); return; }
        if (sizes[i] < 1) { reply_status(id, "refused", "InputWindowSizes[%d] must be at least 1", i); return; }
        if (offsets[i] < 0 || offsets[i] + sizes[i] > dx->sizes[i]) {
            reply_status(id, "refused", "InputWindowOffsets[%d] + InputWindowSizes[%d] exceeds the output size", i, i);
            return;
        }
        reach = 1 + (sizes[i] - 1) / (strides[i] < 0 ? -strides[i] : strides[i]);
        if (dy->sizes[i] < 1 || dy->sizes[i] > reach) {
            reply_status(id, "refused", "InputGradientTensor.Sizes[%d] must be between 1 and %lld", i, reach);
            return;
        }
    }
    /* Pure data movement, so every data type works by element size. */
    size_t es = (size_t)DTYPE_BYTES[dx->dtype];
    uint64_t total = element_count(dx), n = element_count(dy);
    dx->nbytes = total * es;
    unsigned char *out = calloc(total ? (size_t)total : 1, es); /* all-zero bits are +0 in every type */
    if (!out) { reply_status(id, "error", "out of memory"); return; }
    long long pitch[MAX_RANK], start[MAX_RANK], c[MAX_RANK] = {0};
    for (int i = dx->rank - 1; i >= 0; i--) pitch[i] = i == dx->rank - 1 ? 1 : pitch[i + 1] * dx->sizes[i + 1];
    for (int i = 0; i < dx->rank; i++) start[i] = strides[i] > 0 ? offsets[i] : offsets[i] + sizes[i] - 1;
    for (uint64_t k = 0; k < n; k++) {
        long long dst = 0;
        for (int i = 0; i < dx->rank; i++) dst += (start[i] + strides[i] * c[i]) * pitch[i];
        memcpy(out + (size_t)dst * es, dy->data + (size_t)k * es, es);
        for (int i = dy->rank - 1; i >= 0 && ++c[i] == dy->sizes[i]; i--) c[i] = 0; /* row-major odometer */
    }
    reply_ok(id, dx, out);
    free(out);
}

static void handle_run(const jnode *h, const unsigned char *payload, uint64_t payload_len) {
    const char *id = jstr(jget(h, "id")), *op = jstr(jget(h, "op"));
    const jnode *inputs = jget(h, "inputs"), *outputs = jget(h, "outputs");
    if (!id || !op) { reply_status(id ? id : "?", "error", "run request without id or op"); return; }
    int relu = strcmp(op, "ACTIVATION_RELU_GRAD") == 0, slice = strcmp(op, "SLICE_GRAD") == 0;
    if (!relu && !slice) { reply_status(id, "unsupported", "this harness does not implement %s", op); return; }
    tensor x = {0}, dy = {0}, dx = {0};
    const char *bad = NULL;
    const jnode *ex = find_tensor(inputs, "InputTensor"), *edy = find_tensor(inputs, "InputGradientTensor");
    const jnode *edx = find_tensor(outputs, "OutputGradientTensor");
    if (!edy || !edx || (relu && !ex)) { reply_status(id, "error", "request lacks a tensor of %s", op); return; }
    if (relu) bad = read_tensor(ex, payload, payload_len, 1, &x);
    if (!bad) bad = read_tensor(edy, payload, payload_len, 1, &dy);
    if (!bad) bad = read_tensor(edx, payload, payload_len, 0, &dx);
    if (bad) { reply_status(id, "error", "%s", bad); return; }
    if (relu) relu_grad(id, &x, &dy, &dx);
    else slice_grad(id, jget(h, "params"), &dy, &dx);
}

static void send_hello(const char *feature_level) {
    sbuf h = {0};
    sb_printf(&h, "{\"type\":\"hello\",\"protocol\":%d,\"name\":\"dmlc_harness.c\",\"version\":\"1.0\","
              "\"adapter\":\"CPU (example C harness, no GPU)\",\"driver_version\":\"n/a\",\"api\":\"C99\","
              "\"feature_level\":", PROTOCOL_VERSION);
    sb_json_string(&h, feature_level);
    sb_printf(&h, ",\"feature_level_source\":\"--feature-level of the example harness (a DirectML harness asks "
              "IDMLDevice::CheckFeatureSupport)\",\"operators\":{\"ACTIVATION_RELU_GRAD\":[\"FLOAT32\"],"
              "\"SLICE_GRAD\":[");
    for (int t = 1; t <= 11; t++) sb_printf(&h, "%s\"%s\"", t > 1 ? "," : "", DTYPE_NAMES[t]);
    sb_printf(&h, "]}}");
    write_frame(&h, NULL, 0);
    free(h.buf);
}

int main(int argc, char **argv) {
    const char *feature_level = "6_4";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--feature-level") == 0 && i + 1 < argc) feature_level = argv[++i];
        else { fprintf(stderr, "usage: %s [--feature-level 6_4]\n", argv[0]); return 2; }
    }
#ifdef _WIN32
    _setmode(_fileno(stdin), _O_BINARY); /* no CR/LF translation of frame bytes */
    _setmode(_fileno(stdout), _O_BINARY);
#endif
    int handshaken = 0;
    for (;;) {
        jnode *h = NULL;
        unsigned char *payload = NULL;
        uint64_t payload_len = 0;
        int got = read_frame(&h, &payload, &payload_len);
        if (got == 0) return 0; /* the runner closed our stdin: done */
        if (got < 0) { fprintf(stderr, "c-harness: unreadable frame on stdin\n"); return 2; }
        const char *type = jstr(jget(h, "type"));
        if (type && strcmp(type, "hello") == 0) {
            const jnode *version = jget(h, "protocol");
            if (!version || !version->is_int || version->inum != PROTOCOL_VERSION) {
                sbuf e = {0};
                sb_printf(&e, "{\"type\":\"error\",\"message\":\"this harness speaks protocol %d only\"}",
                          PROTOCOL_VERSION);
                write_frame(&e, NULL, 0);
                free(e.buf);
                return 2;
            }
            send_hello(feature_level);
            handshaken = 1;
        } else if (type && strcmp(type, "run") == 0 && handshaken) {
            handle_run(h, payload, payload_len);
        } else if (type && strcmp(type, "bye") == 0) {
            jfree(h);
            free(payload);
            return 0;
        } else {
            fprintf(stderr, "c-harness: ignoring message type %s\n", type ? type : "(none)");
        }
        jfree(h);
        free(payload);
    }
}
