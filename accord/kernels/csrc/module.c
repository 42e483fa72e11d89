/* accord.kernels._decode: the Python face of the decode kernels.
 *
 * Every buffer is passed as an address (a torch tensor's data_ptr()) with its sizes; the Python side
 * owns the memory and keeps it alive for as long as a model built on it exists. The GIL is released
 * while the kernels run, so the server's threads keep going during a step.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>

#include "model.h"
#include "pack.h"
#include "pool.h"
#include "sample.h"

enum { ISA_GENERIC = 0, ISA_AVX2 = 1, ISA_AVX512 = 2, ISA_AMX = 3 };

static const isa_ops *ops_for(long isa) {
    switch (isa) {
        case ISA_AMX: return &ops_amx;
        case ISA_AVX512: return &ops_avx512;
        case ISA_AVX2: return &ops_avx2;
        default: return &ops_generic;
    }
}

/* The instruction sets this CPU can run, as the integers the other calls take. */
static PyObject *cpu_isas(PyObject *self, PyObject *unused) {
    __builtin_cpu_init();
    int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    int avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                 __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
                 __builtin_cpu_supports("avx512vnni");
    if (avx512 && amx_usable()) return Py_BuildValue("(iiii)", ISA_GENERIC, ISA_AVX2, ISA_AVX512, ISA_AMX);
    if (avx512) return Py_BuildValue("(iii)", ISA_GENERIC, ISA_AVX2, ISA_AVX512);
    if (avx2) return Py_BuildValue("(ii)", ISA_GENERIC, ISA_AVX2);
    return Py_BuildValue("(i)", ISA_GENERIC);
}

static PyObject *set_threads(PyObject *self, PyObject *arg) {
    long n = PyLong_AsLong(arg);
    if (n == -1 && PyErr_Occurred()) return NULL;
    return PyLong_FromLong(pool_set_threads((int)n));
}

static PyObject *threads(PyObject *self, PyObject *unused) { return PyLong_FromLong(pool_threads()); }

static int grow(void **buf, size_t bytes) {
    void *p = realloc(*buf, bytes ? bytes : 1);
    if (!p) return -1;
    *buf = p;
    return 0;
}

/* Reads `n` integers of a sequence into `out` (addresses and sizes alike). */
static int read_ints(PyObject *seq, long long *out, Py_ssize_t n, const char *what) {
    PyObject *fast = PySequence_Fast(seq, what);
    if (!fast) return -1;
    if (PySequence_Fast_GET_SIZE(fast) != n) {
        PyErr_Format(PyExc_ValueError, "%s: expected %zd values", what, n);
        Py_DECREF(fast);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        out[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast, i));
        if (out[i] == -1 && PyErr_Occurred()) {
            Py_DECREF(fast);
            return -1;
        }
    }
    Py_DECREF(fast);
    return 0;
}

static int check_matrix(const qmatrix *w, const char *what) {
    if (w->kind < KIND_Q4_0 || w->kind > KIND_Q8_0 || w->cols % QBLOCK || w->rows <= 0) {
        PyErr_Format(PyExc_ValueError, "%s: unsupported matrix (kind %d, %d x %d)", what, w->kind, w->rows, w->cols);
        return -1;
    }
    return 0;
}

static qmatrix matrix_of(const long long *v) {
    /* address, kind, rows, cols */
    qmatrix w = {(const uint8_t *)(intptr_t)v[0], (int)v[1], (int)v[2], (int)v[3]};
    return w;
}

/* -- the model -------------------------------------------------------------------------------- */

/* The inputs of a step, read from Python lists into buffers the handle keeps. */
typedef struct {
    int32_t *ids, *pos, *tables, *lengths, *row_table, *logit_rows, *row, *spans;
    size_t cap_ids, cap_pos, cap_tables, cap_lengths, cap_row_table, cap_logit_rows, cap_row, cap_spans;
    size_t cap_partials;
} inputs;

typedef struct {
    model m;
    long isa;
    inputs in; /* read while the GIL is held, used while it is not: one step at a time per handle */
} handle;

static void free_model(PyObject *capsule) {
    handle *h = PyCapsule_GetPointer(capsule, "accord.decode.model");
    if (!h) return;
    free(h->in.ids);
    free(h->in.pos);
    free(h->in.tables);
    free(h->in.lengths);
    free(h->in.row_table);
    free(h->in.logit_rows);
    free(h->in.row);
    free(h->in.spans);
    free(h->m.partials);
    free(h->m.layers);
    free(h->m.aq);
    free(h->m.ad);
    free(h->m.as);
    free(h->m.qkv);
    free(h->m.attn);
    free(h->m.gu);
    free(h->m.x);
    free(h->m.h);
    free(h->m.hidden);
    free(h->m.scores);
    free(h->m.unpacked);
    free(h->m.split);
    free(h);
}

/* model_new(isa, config, layers, embed, head, out_norm, rope, max_pos, kv, n_blocks, block_size)
 *   config: (n_layers, dim, n_heads, n_kv_heads, head_dim, n_ff, eps, refine_top)
 *   layers: per layer (attn_norm, ffn_norm, then address, kind, rows, cols of qkv, out, gate_up, down)
 *   embed, head: (address, kind, rows, cols) of the token table and the output projection */
static PyObject *model_new(PyObject *self, PyObject *args) {
    long isa;
    int n_layers, dim, n_heads, n_kv_heads, head_dim, n_ff, refine_top, max_pos, n_blocks, block_size;
    double eps;
    PyObject *layers, *embed, *head;
    unsigned long long out_norm, rope, kv;
    if (!PyArg_ParseTuple(args, "l(iiiiiidi)OOOKKiKii", &isa, &n_layers, &dim, &n_heads, &n_kv_heads, &head_dim,
                          &n_ff, &eps, &refine_top, &layers, &embed, &head, &out_norm, &rope, &max_pos, &kv,
                          &n_blocks, &block_size)) {
        return NULL;
    }
    if (n_layers <= 0 || n_heads <= 0 || n_kv_heads <= 0 || n_heads % n_kv_heads || head_dim % 16 ||
        head_dim > MAX_HEAD_DIM || head_dim % QBLOCK || dim % QBLOCK || n_ff % QBLOCK ||
        n_heads / n_kv_heads > MAX_GROUP || block_size != CACHE_BLOCK) {
        PyErr_SetString(PyExc_ValueError, "model shape not supported by the decode kernels");
        return NULL;
    }
    handle *h = calloc(1, sizeof *h);
    if (!h) return PyErr_NoMemory();
    h->isa = isa;
    model *m = &h->m;
    m->n_layers = n_layers;
    m->dim = dim;
    m->n_heads = n_heads;
    m->n_kv_heads = n_kv_heads;
    m->head_dim = head_dim;
    m->n_ff = n_ff;
    m->eps = (float)eps;
    m->widest = dim > n_ff ? dim : n_ff;
    if (n_heads * head_dim > m->widest) m->widest = n_heads * head_dim;
    m->refine_top = refine_top < 1 ? 1 : refine_top;
    m->out_norm = (const float *)(intptr_t)out_norm;
    m->rope = (const float *)(intptr_t)rope;
    m->max_pos = max_pos;
    m->kv = (uint16_t *)(intptr_t)kv;
    m->n_blocks = n_blocks;
    m->block_size = block_size;
    PyObject *capsule = PyCapsule_New(h, "accord.decode.model", free_model);
    if (!capsule) {
        free(h);
        return NULL;
    }
    m->layers = calloc((size_t)n_layers, sizeof(layer));
    long long values[18];
    if (!m->layers) {
        Py_DECREF(capsule);
        return PyErr_NoMemory();
    }
    if (read_ints(head, values, 4, "head") < 0) goto fail;
    m->head = matrix_of(values);
    if (check_matrix(&m->head, "head") < 0 || m->head.cols != dim) goto fail;
    if (read_ints(embed, values, 4, "embed") < 0) goto fail;
    m->embed = matrix_of(values);
    if (check_matrix(&m->embed, "embed") < 0 || m->embed.cols != dim) goto fail;
    PyObject *fast = PySequence_Fast(layers, "layers");
    if (!fast) goto fail;
    if (PySequence_Fast_GET_SIZE(fast) != n_layers) {
        Py_DECREF(fast);
        PyErr_SetString(PyExc_ValueError, "layers: one entry per layer expected");
        goto fail;
    }
    int adim = n_heads * head_dim, qkv_rows = adim + 2 * n_kv_heads * head_dim;
    for (int i = 0; i < n_layers; i++) {
        if (read_ints(PySequence_Fast_GET_ITEM(fast, i), values, 18, "layer") < 0) {
            Py_DECREF(fast);
            goto fail;
        }
        layer *L = &m->layers[i];
        L->attn_norm = (const float *)(intptr_t)values[0];
        L->ffn_norm = (const float *)(intptr_t)values[1];
        L->qkv = matrix_of(values + 2);
        L->out = matrix_of(values + 6);
        L->gate_up = matrix_of(values + 10);
        L->down = matrix_of(values + 14);
        if (check_matrix(&L->qkv, "qkv") < 0 || check_matrix(&L->out, "out") < 0 ||
            check_matrix(&L->gate_up, "gate_up") < 0 || check_matrix(&L->down, "down") < 0) {
            Py_DECREF(fast);
            goto fail;
        }
        if (L->qkv.rows != qkv_rows || L->qkv.cols != dim || L->out.rows != dim || L->out.cols != adim ||
            L->gate_up.rows != 2 * n_ff || L->gate_up.cols != dim || L->down.rows != dim || L->down.cols != n_ff) {
            Py_DECREF(fast);
            PyErr_Format(PyExc_ValueError, "layer %d: matrix shapes do not match the model", i);
            goto fail;
        }
    }
    Py_DECREF(fast);
    return capsule;
fail:
    Py_DECREF(capsule);
    return NULL;
}

/* Grows the model's scratch to hold `rows` rows, `n_logits` logit rows and `nth` members, for
 * instruction set `isa` (AMX's prompt products unpack more weights at a time, and split activations). */
static int reserve(model *m, long isa, int rows, int n_logits, int nth) {
    if (rows <= m->cap_rows && n_logits <= m->cap_logits && nth <= m->cap_threads) return 0;
    int r = rows > m->cap_rows ? rows : m->cap_rows, t = nth > m->cap_threads ? nth : m->cap_threads, tiles = isa == ISA_AMX;
    int lr = n_logits > m->cap_logits ? n_logits : m->cap_logits;
    size_t nr = (size_t)r, wide = (size_t)m->widest, f = sizeof(float);
    if (grow((void **)&m->aq, nr * wide) || grow((void **)&m->x, nr * m->dim * f) || grow((void **)&m->ad, nr * (wide / QBLOCK) * f) ||
        grow((void **)&m->as, nr * (wide / QBLOCK) * f) || grow((void **)&m->h, nr * wide * f) ||
        grow((void **)&m->qkv, nr * m->layers[0].qkv.rows * f) ||
        grow((void **)&m->attn, nr * m->n_heads * m->head_dim * f) ||
        grow((void **)&m->gu, nr * 2 * m->n_ff * f) || grow((void **)&m->hidden, (size_t)lr * m->dim * f) ||
        grow((void **)&m->scores, (size_t)t * MEMBER_SCORES(m) * f) ||
        grow((void **)&m->unpacked, (size_t)t * UNPACKED_FLOATS(wide, tiles) * f) ||
        (tiles && grow((void **)&m->split, SPLIT_BYTES(r, m->widest)))) {
        PyErr_NoMemory();
        return -1;
    }
    m->cap_rows = r;
    m->cap_logits = lr;
    m->cap_threads = t;
    return 0;
}

/* Whether an entry got the number of arguments it takes (a TypeError if not). */
static int takes(Py_ssize_t nargs, Py_ssize_t want, const char *entry) {
    if (nargs == want) return 1;
    PyErr_Format(PyExc_TypeError, "%s takes %zd arguments", entry, want);
    return 0;
}

static int args_to_addresses(PyObject *const *args, Py_ssize_t n, long long *out) {
    for (Py_ssize_t i = 0; i < n; i++) {
        out[i] = PyLong_AsLongLong(args[i]);
        if (out[i] == -1 && PyErr_Occurred()) return -1;
    }
    return 0;
}

/* Reads a sequence of Python ints into a C array of int32 (grown as needed); -1 on error. */
static Py_ssize_t read_list(PyObject *seq, int32_t **buf, size_t *cap, const char *what) {
    PyObject *fast = PySequence_Fast(seq, what);
    if (!fast) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    if ((size_t)n > *cap && grow((void **)buf, (size_t)n * sizeof(int32_t)) < 0) {
        Py_DECREF(fast);
        PyErr_NoMemory();
        return -1;
    }
    if ((size_t)n > *cap) *cap = (size_t)n;
    PyObject **items = PySequence_Fast_ITEMS(fast);
    for (Py_ssize_t i = 0; i < n; i++) {
        long v = PyLong_AsLong(items[i]);
        if ((v == -1 && PyErr_Occurred()) || v < INT32_MIN || v > INT32_MAX) {
            if (!PyErr_Occurred()) PyErr_Format(PyExc_OverflowError, "%s: value out of range", what);
            Py_DECREF(fast);
            return -1;
        }
        (*buf)[i] = (int32_t)v;
    }
    Py_DECREF(fast);
    return n;
}

/* Every table, zero-padded to the longest, row-major; `lengths` its real length. */
static int read_tables(inputs *step_inputs, PyObject *seq, int *count, int *stride) {
    PyObject *fast = PySequence_Fast(seq, "tables");
    if (!fast) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast), width = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t len = PyObject_Length(PySequence_Fast_GET_ITEM(fast, i));
        if (len < 0) {
            Py_DECREF(fast);
            return -1;
        }
        if (len > width) width = len;
    }
    size_t need = (size_t)(n * width > 0 ? n * width : 1);
    if (need > step_inputs->cap_tables) {
        if (grow((void **)&step_inputs->tables, need * sizeof(int32_t)) < 0) goto nomem;
        step_inputs->cap_tables = need;
    }
    if ((size_t)n > step_inputs->cap_lengths) {
        if (grow((void **)&step_inputs->lengths, (size_t)n * sizeof(int32_t)) < 0) goto nomem;
        step_inputs->cap_lengths = (size_t)n;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t len = read_list(PySequence_Fast_GET_ITEM(fast, i), &step_inputs->row, &step_inputs->cap_row, "table");
        if (len < 0) {
            Py_DECREF(fast);
            return -1;
        }
        int32_t *t = step_inputs->tables + (size_t)i * width;
        memcpy(t, step_inputs->row, (size_t)len * sizeof(int32_t));
        memset(t + len, 0, (size_t)(width - len) * sizeof(int32_t));
        step_inputs->lengths[i] = (int32_t)len;
    }
    Py_DECREF(fast);
    *count = (int)n;
    *stride = (int)width;
    return 0;
nomem:
    Py_DECREF(fast);
    PyErr_NoMemory();
    return -1;
}

/* step(model, precise, ids, positions, tables, row_tables, logit_rows, logits): every layer for the
 * tokens `ids`, row i at positions[i] of the sequence whose cache blocks are tables[row_tables[i]];
 * the logits of rows logit_rows go to `logits` (an address). */
static PyObject *run_step(PyObject *self, PyObject *args) {
    PyObject *capsule, *ids, *positions, *tables, *row_tables, *logit_rows;
    int precise;
    unsigned long long logits;
    if (!PyArg_ParseTuple(args, "OpOOOOOK", &capsule, &precise, &ids, &positions, &tables, &row_tables,
                          &logit_rows, &logits)) {
        return NULL;
    }
    handle *h = PyCapsule_GetPointer(capsule, "accord.decode.model");
    if (!h) return NULL;
    model *m = &h->m;
    inputs *in = &h->in;
    int n_tables, stride;
    Py_ssize_t rows = read_list(ids, &in->ids, &in->cap_ids, "ids");
    if (rows < 0 || read_list(positions, &in->pos, &in->cap_pos, "positions") != rows ||
        read_list(row_tables, &in->row_table, &in->cap_row_table, "row_tables") != rows ||
        read_tables(in, tables, &n_tables, &stride) < 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "one id, position and table per row");
        return NULL;
    }
    Py_ssize_t n_logits = read_list(logit_rows, &in->logit_rows, &in->cap_logit_rows, "logit_rows");
    if (n_logits < 0) return NULL;
    if (rows == 0) Py_RETURN_NONE;
    for (Py_ssize_t i = 0; i < n_logits; i++) {
        if (in->logit_rows[i] < 0 || in->logit_rows[i] >= rows) {
            PyErr_SetString(PyExc_IndexError, "logit row out of range");
            return NULL;
        }
    }
    for (Py_ssize_t i = 0; i < rows; i++) {
        int t = in->row_table[i], p = in->pos[i];
        if (in->ids[i] < 0 || in->ids[i] >= m->embed.rows) {
            PyErr_Format(PyExc_IndexError, "token id %d out of range", in->ids[i]);
            return NULL;
        }
        if (t < 0 || t >= n_tables) {
            PyErr_SetString(PyExc_IndexError, "a row's table is out of range");
            return NULL;
        }
        if (p < 0 || p >= m->max_pos || p / m->block_size >= in->lengths[t]) {
            PyErr_Format(PyExc_IndexError, "position %d is past its sequence's blocks", p);
            return NULL;
        }
        for (int b = 0; b <= p / m->block_size; b++) {
            int32_t block = in->tables[(size_t)t * stride + b];
            if (block < 0 || block >= m->n_blocks) {
                PyErr_Format(PyExc_IndexError, "cache block %d out of range", block);
                return NULL;
            }
        }
    }
    if (reserve(m, h->isa, (int)rows, (int)n_logits, pool_threads()) < 0) return NULL;
    /* A decode row's sequence is attended to in spans of SPAN positions (forward.h). */
    if ((size_t)rows + 1 > in->cap_spans) {
        if (grow((void **)&in->spans, ((size_t)rows + 1) * sizeof(int32_t)) < 0) return PyErr_NoMemory();
        in->cap_spans = (size_t)rows + 1;
    }
    in->spans[0] = 0;
    for (Py_ssize_t i = 0; i < rows; i++) in->spans[i + 1] = in->spans[i] + (precise ? 1 : in->pos[i] / SPAN + 1);
    size_t partials = precise ? 0 : (size_t)in->spans[rows] * m->n_heads * (m->head_dim + 2);
    if (partials > in->cap_partials) {
        if (grow((void **)&m->partials, partials * sizeof(float)) < 0) return PyErr_NoMemory();
        in->cap_partials = partials;
    }
    step s = {.m = m,
              .rows = (int)rows,
              .precise = precise,
              .x = m->x,
              .ids = in->ids,
              .pos = in->pos,
              .tables = in->tables,
              .table_stride = stride,
              .row_table = in->row_table,
              .logit_rows = in->logit_rows,
              .n_logits = (int)n_logits,
              .spans = in->spans,
              .logits = (float *)(intptr_t)logits};
    const isa_ops *ops = ops_for(h->isa);
    Py_BEGIN_ALLOW_THREADS
    pool_run(ops->step, &s);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* logits(model, rows, hidden, logits) */
static PyObject *logits_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!takes(nargs, 4, "logits")) return NULL;
    handle *h = PyCapsule_GetPointer(args[0], "accord.decode.model");
    if (!h) return NULL;
    long long v[3];
    if (args_to_addresses(args + 1, 3, v) < 0) return NULL;
    head_job job = {&h->m, (int)v[0], (const float *)(intptr_t)v[1], (float *)(intptr_t)v[2]};
    if (job.rows <= 0) Py_RETURN_NONE;
    if (reserve(&h->m, h->isa, job.rows, job.rows, pool_threads()) < 0) return NULL;
    const isa_ops *ops = ops_for(h->isa);
    Py_BEGIN_ALLOW_THREADS
    pool_run(ops->logits, &job);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* packed_size(kind, rows, cols) */
static PyObject *packed_size_call(PyObject *self, PyObject *args) {
    int kind, rows, cols;
    if (!PyArg_ParseTuple(args, "iii", &kind, &rows, &cols)) return NULL;
    qmatrix w = {NULL, kind, rows, cols};
    if (check_matrix(&w, "matrix") < 0) return NULL;
    return PyLong_FromSize_t(packed_size(kind, rows, cols));
}

/* The arguments of an entry that names a matrix first, as (kind, address, rows, cols, ...): all of them
 * read into v, the matrix checked; -1 with an exception set otherwise. */
static int matrix_args(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t want, const char *entry, long long *v,
                       qmatrix *w) {
    if (!takes(nargs, want, entry) || args_to_addresses(args, want, v) < 0) return -1;
    qmatrix m = {(const uint8_t *)(intptr_t)v[1], (int)v[0], (int)v[2], (int)v[3]};
    *w = m;
    return check_matrix(w, "matrix");
}

/* pack(kind, raw, rows, cols, out): GGML blocks -> the packed layout */
static PyObject *pack_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    long long v[5];
    qmatrix w;
    if (matrix_args(args, nargs, 5, "pack", v, &w) < 0) return NULL;
    Py_BEGIN_ALLOW_THREADS
    pack_matrix((const uint8_t *)(intptr_t)v[1], w.kind, w.rows, w.cols, (uint8_t *)(intptr_t)v[4]);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* unpack(kind, packed, rows, cols, out): every row as float32, on the team */
static PyObject *unpack_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    long long v[5];
    qmatrix w;
    if (matrix_args(args, nargs, 5, "unpack", v, &w) < 0) return NULL;
    Py_BEGIN_ALLOW_THREADS
    unpack_matrix(&w, (float *)(intptr_t)v[4]);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* gather(kind, packed, rows, cols, ids, n, out): rows ids[0..n) (int64) as float32, on this thread */
static PyObject *gather_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    long long v[7];
    qmatrix w;
    if (matrix_args(args, nargs, 7, "gather", v, &w) < 0) return NULL;
    const int64_t *ids = (const int64_t *)(intptr_t)v[4];
    float *out = (float *)(intptr_t)v[6];
    for (long long i = 0; i < v[5]; i++) {
        if (ids[i] < 0 || ids[i] >= w.rows) {
            PyErr_Format(PyExc_IndexError, "row %lld out of range for %d rows", (long long)ids[i], w.rows);
            return NULL;
        }
    }
    Py_BEGIN_ALLOW_THREADS
    for (long long i = 0; i < v[5]; i++) unpack_row(&w, (int)ids[i], out + i * w.cols);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* product(isa, address, kind, rows, cols, x, m, out, precise): out[m][rows] = x[m][cols] . w[rows][cols],
 * with x quantised to 8 bits (precise == 0) or in float32 */
static PyObject *product_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!takes(nargs, 9, "product")) return NULL;
    long long v[9];
    if (args_to_addresses(args, 9, v) < 0) return NULL;
    long long mv[4] = {v[1], v[2], v[3], v[4]};
    qmatrix w = matrix_of(mv);
    if (check_matrix(&w, "matrix") < 0) return NULL;
    int rows = (int)v[6], precise = (int)v[8];
    if (rows <= 0) Py_RETURN_NONE;
    size_t nb = (size_t)(w.cols / QBLOCK);
    int nth = pool_threads();
    void *q = NULL, *d = NULL, *s = NULL, *scratch = NULL, *split = NULL;
    if (precise) {
        scratch = malloc((size_t)nth * UNPACKED_FLOATS(w.cols, v[0] == ISA_AMX) * sizeof(float));
        if (v[0] == ISA_AMX && !(split = malloc(SPLIT_BYTES(rows, w.cols)))) {
            free(scratch);
            return PyErr_NoMemory();
        }
    } else {
        q = malloc((size_t)rows * w.cols);
        d = malloc((size_t)rows * nb * sizeof(float));
        s = malloc((size_t)rows * nb * sizeof(float));
    }
    if (precise ? !scratch : (!q || !d || !s)) {
        free(q);
        free(d);
        free(s);
        free(scratch);
        return PyErr_NoMemory();
    }
    product p = {&w, rows, (const float *)(intptr_t)v[5], (float *)(intptr_t)v[7], {q, d, s, w.cols}, scratch, split};
    const isa_ops *ops = ops_for(v[0]);
    Py_BEGIN_ALLOW_THREADS
    pool_run(precise ? ops->float_product : ops->product, &p);
    Py_END_ALLOW_THREADS
    free(q);
    free(d);
    free(s);
    free(scratch);
    free(split);
    Py_RETURN_NONE;
}

/* sample(logits, rows, vocab, params) -> [token]: params per row (temperature, top_p, top_k, seed, step) */
static PyObject *sample_call(PyObject *self, PyObject *args) {
    unsigned long long address;
    int rows, vocab;
    PyObject *params;
    if (!PyArg_ParseTuple(args, "KiiO", &address, &rows, &vocab, &params)) return NULL;
    PyObject *fast = PySequence_Fast(params, "params");
    if (!fast) return NULL;
    if (PySequence_Fast_GET_SIZE(fast) != rows || rows < 0 || vocab <= 0) {
        Py_DECREF(fast);
        PyErr_SetString(PyExc_ValueError, "one parameter tuple per row");
        return NULL;
    }
    sampling_params *p = calloc((size_t)(rows ? rows : 1), sizeof *p);
    int *chosen = calloc((size_t)(rows ? rows : 1), sizeof *chosen);
    if (!p || !chosen) {
        Py_DECREF(fast);
        free(p);
        free(chosen);
        return PyErr_NoMemory();
    }
    for (int i = 0; i < rows; i++) {
        unsigned long long seed;
        long long step;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(fast, i), "fdiKL", &p[i].temperature, &p[i].top_p,
                              &p[i].top_k, &seed, &step)) {
            Py_DECREF(fast);
            free(p);
            free(chosen);
            return NULL;
        }
        p[i].seed = seed;
        p[i].step = step;
    }
    Py_DECREF(fast);
    const float *logits = (const float *)(intptr_t)address;
    int failed;
    Py_BEGIN_ALLOW_THREADS
    failed = sample_rows(logits, rows, vocab, p, chosen);
    Py_END_ALLOW_THREADS
    PyObject *out = failed ? PyErr_NoMemory() : PyList_New(rows);
    for (int i = 0; out && !failed && i < rows; i++) PyList_SET_ITEM(out, i, PyLong_FromLong(chosen[i]));
    free(p);
    free(chosen);
    return out;
}

static PyMethodDef methods[] = {
    {"cpu_isas", cpu_isas, METH_NOARGS, "The instruction sets this CPU runs: 0 baseline, 1 AVX2, 2 AVX-512 VNNI, 3 AMX."},
    {"set_threads", set_threads, METH_O, "Set the size of the kernels' thread team; returns it."},
    {"threads", threads, METH_NOARGS, "The size of the kernels' thread team."},
    {"model_new", model_new, METH_VARARGS, "Build a model over weights, cache and rotary table by address."},
    {"step", run_step, METH_VARARGS, "Run one step of every layer."},
    {"logits", (PyCFunction)(void (*)(void))logits_call, METH_FASTCALL, "Project hidden rows, leaders refined."},
    {"packed_size", packed_size_call, METH_VARARGS, "Bytes of a matrix in the packed layout."},
    {"pack", (PyCFunction)(void (*)(void))pack_call, METH_FASTCALL, "GGML blocks -> the packed layout."},
    {"unpack", (PyCFunction)(void (*)(void))unpack_call, METH_FASTCALL, "A packed matrix as float32."},
    {"gather", (PyCFunction)(void (*)(void))gather_call, METH_FASTCALL, "Rows of a packed matrix as float32."},
    {"sample", sample_call, METH_VARARGS, "Choose each row's token: greedy or seeded Gumbel-max under top-k/top-p."},
    {"product", (PyCFunction)(void (*)(void))product_call, METH_FASTCALL, "Multiply rows by a block matrix."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_decode", NULL, -1, methods};

PyMODINIT_FUNC PyInit__decode(void) { return PyModule_Create(&module); }
