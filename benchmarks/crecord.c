/* A prototype recorder written in C, for benchmarks/trace_guard.py --c: the
   floor under a guard whose record path is compiled. Not part of policyspec.

   A Recorder wraps a policy. Each call is forwarded to the policy (vectorcall,
   no Python frame) and, unless the recorder only forwards, appended to a
   buffer as fixed-width int64 values: the operation, key ids, the chunk's
   identity when it is the one inserted under its key, ref_cnt, the request's
   id and the keys' positions in it. It keeps the maps the guard keeps (key ->
   id, req_id -> id, key -> the chunk inserted) and hands the buffer to a sink
   every 8,192 calls. Nothing encodes the values into a history, and nothing
   judges them: what a second process would do. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

enum {GET, INSERT, REMOVE, TOUCH, EVICT, CLEAR, MARK_E, MARK_NE, STORE_MISS, ACCESS, FINISH, OPS};
static const char *names[OPS] = {"get", "insert", "remove", "touch", "evict", "clear",
    "mark_evictable", "mark_non_evictable", "on_store_miss", "on_request_access",
    "on_request_finished"};
static PyObject *s_ref, *s_req_id, *s_positions;

enum {NONE = -1, NOT_HELD = -2, NOT_A_PAIR = -3, NOT_A_LIST = -4, NO_REF = -9};

typedef struct {
    PyObject_HEAD
    int forward_only;
    PyObject *policy, *sink;
    PyObject *m[OPS];
    PyObject *ids, *reqs, *held;
    int64_t *buf;
    Py_ssize_t len, cap, records;
    int64_t next_id, next_req;
} Rec;

static int put(Rec *r, int64_t v) {
    if (r->len == r->cap) {
        Py_ssize_t cap = r->cap ? 2 * r->cap : 1 << 16;
        int64_t *b = PyMem_Realloc(r->buf, cap * sizeof(int64_t));
        if (!b) { PyErr_NoMemory(); return -1; }
        r->buf = b;
        r->cap = cap;
    }
    r->buf[r->len++] = v;
    return 0;
}

/* The number of ``key`` in ``table``, numbered on first sight; -1 on error. */
static int64_t number(PyObject *table, int64_t *next, PyObject *key) {
    PyObject *v = PyDict_GetItemWithError(table, key);
    if (v) return PyLong_AsLongLong(v);
    if (PyErr_Occurred()) return -1;
    PyObject *n = PyLong_FromLongLong(*next);
    if (!n || PyDict_SetItem(table, key, n) < 0) { Py_XDECREF(n); return -1; }
    Py_DECREF(n);
    return (*next)++;
}

static int put_key(Rec *r, PyObject *key) {
    int64_t k = number(r->ids, &r->next_id, key);
    return k < 0 ? -1 : put(r, k);
}

static int64_t ref_of(PyObject *chunk) {
    PyObject *v = PyObject_GetAttr(chunk, s_ref);
    if (!v) { PyErr_Clear(); return NO_REF; }
    int64_t x = PyLong_AsLongLong(v);
    Py_DECREF(v);
    if (x == -1 && PyErr_Occurred()) { PyErr_Clear(); return NO_REF; }
    return x;
}

static int put_request(Rec *r, PyObject *ctx) {
    if (ctx == NULL || ctx == Py_None) return put(r, NONE);
    PyObject *name = PyObject_GetAttr(ctx, s_req_id);
    if (!name) { PyErr_Clear(); return put(r, NONE); }
    int64_t q = number(r->reqs, &r->next_req, name);
    Py_DECREF(name);
    return q < 0 ? -1 : put(r, q);
}

/* A count, then the ids of an iterable of keys (a snapshot), each followed by
   its position in ``positions`` when given (NONE when it has none). */
static int put_keys(Rec *r, PyObject *keys, PyObject *positions) {
    PyObject *it = PyObject_GetIter(keys);
    if (!it) return -1;
    Py_ssize_t at = r->len;
    if (put(r, 0) < 0) { Py_DECREF(it); return -1; }
    int64_t count = 0;
    PyObject *key;
    while ((key = PyIter_Next(it))) {
        int bad = put_key(r, key);
        if (!bad && positions) {
            PyObject *p = PyDict_GetItemWithError(positions, key);
            bad = PyErr_Occurred() ? -1 : put(r, p ? PyLong_AsLongLong(p) : NONE);
        }
        Py_DECREF(key);
        if (bad) { Py_DECREF(it); return -1; }
        count++;
    }
    Py_DECREF(it);
    if (PyErr_Occurred()) return -1;
    r->buf[at] = count;
    return 0;
}

/* One call recorded: the buffer goes to the sink every 8,192 calls. Takes
   ``res`` and gives it back, or releases it on an error (NULL). */
static PyObject *done(Rec *r, PyObject *res, int bad) {
    if (!bad && ++r->records % 8192 == 0 && r->sink != Py_None) {
        PyObject *b = PyBytes_FromStringAndSize((const char *)r->buf, r->len * sizeof(int64_t));
        PyObject *out = b ? PyObject_CallOneArg(r->sink, b) : NULL;
        Py_XDECREF(b);
        bad = out == NULL;
        Py_XDECREF(out);
        r->len = 0;
    }
    if (bad) { Py_DECREF(res); return NULL; }
    return res;
}

static int arity(Py_ssize_t n, Py_ssize_t least, Py_ssize_t most, int op) {
    if (n >= least && n <= most) return 0;
    PyErr_Format(PyExc_TypeError, "%s takes %zd to %zd arguments (%zd given)", names[op], least,
                 most, n);
    return -1;
}

static PyObject *call(Rec *r, int op, PyObject *const *args, Py_ssize_t n) {
    return PyObject_Vectorcall(r->m[op], args, n, NULL);
}

static PyObject *Rec_get(Rec *r, PyObject *const *args, Py_ssize_t n) {
    if (arity(n, 1, 1, GET) < 0) return NULL;
    PyObject *res = call(r, GET, args, n);
    if (!res || r->forward_only) return res;
    int bad = put(r, GET) || put_key(r, args[0]);
    if (!bad && res == Py_None) bad = put(r, NONE);
    else if (!bad) {
        PyObject *held = PyDict_GetItemWithError(r->held, args[0]);
        bad = PyErr_Occurred() || put(r, held == res ? (int64_t)(intptr_t)res : NOT_HELD)
              || put(r, ref_of(res));
    }
    return done(r, res, bad);
}

static PyObject *Rec_insert(Rec *r, PyObject *const *args, Py_ssize_t n) {
    if (arity(n, 2, 3, INSERT) < 0) return NULL;
    int64_t before = r->forward_only ? 0 : ref_of(args[1]);
    PyObject *res = call(r, INSERT, args, n);
    if (!res || r->forward_only) return res;
    int bad = PyDict_SetItem(r->held, args[0], args[1]) || put(r, INSERT) || put_key(r, args[0])
              || put(r, (int64_t)(intptr_t)args[1]) || put(r, before) || put(r, ref_of(args[1]))
              || put_request(r, n > 2 ? args[2] : NULL);
    return done(r, res, bad);
}

/* remove, mark_evictable, mark_non_evictable: the key, and for a mark the
   ref_cnt of the chunk inserted under it. */
static PyObject *one_key(Rec *r, int op, PyObject *const *args, Py_ssize_t n) {
    if (arity(n, 1, 1, op) < 0) return NULL;
    PyObject *res = call(r, op, args, n);
    if (!res || r->forward_only) return res;
    int bad = put(r, op) || put_key(r, args[0]);
    if (!bad && op == REMOVE) {
        if (PyDict_DelItem(r->held, args[0]) < 0) {
            if (PyErr_ExceptionMatches(PyExc_KeyError)) PyErr_Clear();
            else bad = -1;
        }
    } else if (!bad) {
        PyObject *held = PyDict_GetItemWithError(r->held, args[0]);
        bad = PyErr_Occurred() || put(r, held ? ref_of(held) : NO_REF);
    }
    return done(r, res, bad);
}
static PyObject *Rec_remove(Rec *r, PyObject *const *a, Py_ssize_t n) { return one_key(r, REMOVE, a, n); }
static PyObject *Rec_mark_e(Rec *r, PyObject *const *a, Py_ssize_t n) { return one_key(r, MARK_E, a, n); }
static PyObject *Rec_mark_ne(Rec *r, PyObject *const *a, Py_ssize_t n) { return one_key(r, MARK_NE, a, n); }

/* touch and the hooks that take keys: the request, then the keys as passed
   (with their positions, for a hook), before the call. */
static PyObject *keys_call(Rec *r, int op, PyObject *const *args, Py_ssize_t n) {
    if (arity(n, 1, 2, op) < 0) return NULL;
    if (r->forward_only) return call(r, op, args, n);
    PyObject *ctx = n > 1 ? args[1] : NULL;
    if (put(r, op) || put_request(r, ctx)) return NULL;
    PyObject *positions = NULL;
    if (ctx && ctx != Py_None && op != TOUCH) {
        positions = PyObject_GetAttr(ctx, s_positions);
        if (!positions) PyErr_Clear();
        else if (!PyDict_Check(positions)) Py_CLEAR(positions);
    }
    int bad = put_keys(r, args[0], positions);
    Py_XDECREF(positions);
    if (bad) return NULL;
    PyObject *res = call(r, op, args, n);
    return res ? done(r, res, 0) : NULL;
}
static PyObject *Rec_touch(Rec *r, PyObject *const *a, Py_ssize_t n) { return keys_call(r, TOUCH, a, n); }
static PyObject *Rec_store_miss(Rec *r, PyObject *const *a, Py_ssize_t n) { return keys_call(r, STORE_MISS, a, n); }
static PyObject *Rec_access(Rec *r, PyObject *const *a, Py_ssize_t n) { return keys_call(r, ACCESS, a, n); }

static PyObject *Rec_finish(Rec *r, PyObject *const *args, Py_ssize_t n) {
    if (arity(n, 4, 4, FINISH) < 0) return NULL;
    if (r->forward_only) return call(r, FINISH, args, n);
    if (put(r, FINISH) || put_request(r, args[3])) return NULL;
    PyObject *it = PyObject_GetIter(args[0]);
    if (!it) return NULL;
    PyObject *group;
    while ((group = PyIter_Next(it))) {
        int bad = put_keys(r, group, NULL);
        Py_DECREF(group);
        if (bad) { Py_DECREF(it); return NULL; }
    }
    Py_DECREF(it);
    if (PyErr_Occurred() || put_keys(r, args[1], NULL) || put_keys(r, args[2], NULL)) return NULL;
    PyObject *res = call(r, FINISH, args, n);
    return res ? done(r, res, 0) : NULL;
}

/* evict: n and the protected keys before the call; then each victim's key,
   identity and ref_cnt, its chunk forgotten (or NONE, NOT_A_LIST, NOT_A_PAIR). */
static PyObject *Rec_evict(Rec *r, PyObject *const *args, Py_ssize_t n) {
    if (arity(n, 2, 2, EVICT) < 0) return NULL;
    if (r->forward_only) return call(r, EVICT, args, n);
    int64_t count = PyLong_AsLongLong(args[0]);
    if ((count == -1 && PyErr_Occurred()) || put(r, EVICT) || put(r, count)
        || put_keys(r, args[1], NULL)) return NULL;
    PyObject *res = call(r, EVICT, args, n);
    if (!res) return NULL;
    if (res == Py_None) return done(r, res, put(r, NONE));
    if (!PyList_CheckExact(res)) return done(r, res, put(r, NOT_A_LIST));
    Py_ssize_t m = PyList_GET_SIZE(res);
    int bad = put(r, m);
    for (Py_ssize_t i = 0; i < m && !bad; i++) {
        PyObject *pair = PyList_GET_ITEM(res, i);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) { bad = put(r, NOT_A_PAIR); continue; }
        PyObject *key = PyTuple_GET_ITEM(pair, 0), *chunk = PyTuple_GET_ITEM(pair, 1);
        PyObject *held = PyDict_GetItemWithError(r->held, key);
        bad = PyErr_Occurred() || put_key(r, key)
              || put(r, held == chunk ? (int64_t)(intptr_t)chunk : NOT_HELD) || put(r, ref_of(chunk))
              || (held && PyDict_DelItem(r->held, key) < 0);
    }
    return done(r, res, bad);
}

static PyObject *Rec_clear(Rec *r, PyObject *const *args, Py_ssize_t n) {
    if (arity(n, 0, 0, CLEAR) < 0) return NULL;
    PyObject *res = call(r, CLEAR, args, n);
    if (!res || r->forward_only) return res;
    PyDict_Clear(r->held);
    return done(r, res, put(r, CLEAR));
}

static PyObject *Rec_records(Rec *r, PyObject *unused) { return PyLong_FromSsize_t(r->records); }

/* Recorder(policy, sink=None, forward_only=0) */
static int Rec_init(Rec *r, PyObject *args, PyObject *kw) {
    PyObject *policy, *sink = Py_None;
    if (!PyArg_ParseTuple(args, "O|Oi", &policy, &sink, &r->forward_only)) return -1;
    Py_INCREF(policy);
    r->policy = policy;
    Py_INCREF(sink);
    r->sink = sink;
    for (int i = 0; i < OPS; i++) {
        r->m[i] = PyObject_GetAttrString(policy, names[i]);
        if (!r->m[i]) return -1;
    }
    r->ids = PyDict_New();
    r->reqs = PyDict_New();
    r->held = PyDict_New();
    return (r->ids && r->reqs && r->held) ? 0 : -1;
}

static void Rec_dealloc(Rec *r) {
    Py_XDECREF(r->policy);
    Py_XDECREF(r->sink);
    for (int i = 0; i < OPS; i++) Py_XDECREF(r->m[i]);
    Py_XDECREF(r->ids);
    Py_XDECREF(r->reqs);
    Py_XDECREF(r->held);
    PyMem_Free(r->buf);
    Py_TYPE(r)->tp_free((PyObject *)r);
}

/* Anything else the caller reads (cache_capacity, ...) is the policy's. */
static PyObject *Rec_getattro(Rec *r, PyObject *name) {
    PyObject *v = PyObject_GenericGetAttr((PyObject *)r, name);
    if (v || !PyErr_ExceptionMatches(PyExc_AttributeError)) return v;
    PyErr_Clear();
    return PyObject_GetAttr(r->policy, name);
}

#define FAST(name, fn) {name, (PyCFunction)(void (*)(void))fn, METH_FASTCALL, NULL}
static PyMethodDef Rec_methods[] = {
    FAST("get", Rec_get), FAST("insert", Rec_insert), FAST("remove", Rec_remove),
    FAST("touch", Rec_touch), FAST("evict", Rec_evict), FAST("clear", Rec_clear),
    FAST("mark_evictable", Rec_mark_e), FAST("mark_non_evictable", Rec_mark_ne),
    FAST("on_store_miss", Rec_store_miss), FAST("on_request_access", Rec_access),
    FAST("on_request_finished", Rec_finish),
    {"records", (PyCFunction)Rec_records, METH_NOARGS, "Calls recorded so far."},
    {NULL},
};

static PyTypeObject RecType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "crecord.Recorder",
    .tp_basicsize = sizeof(Rec),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Rec_init,
    .tp_dealloc = (destructor)Rec_dealloc,
    .tp_methods = Rec_methods,
    .tp_getattro = (getattrofunc)Rec_getattro,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, .m_name = "crecord", .m_doc = NULL, .m_size = -1, .m_methods = NULL,
};

PyMODINIT_FUNC PyInit_crecord(void) {
    s_ref = PyUnicode_InternFromString("ref_cnt");
    s_req_id = PyUnicode_InternFromString("req_id");
    s_positions = PyUnicode_InternFromString("_offload_key_positions");
    if (!s_ref || !s_req_id || !s_positions || PyType_Ready(&RecType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&RecType);
    if (PyModule_AddObject(m, "Recorder", (PyObject *)&RecType) < 0) {
        Py_DECREF(&RecType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
