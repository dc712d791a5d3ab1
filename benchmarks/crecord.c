/* A prototype recorder in C: the floor under a guard whose record path is
   compiled. Wraps a policy; every call forwards to it and appends fixed-width
   int64 records (op, key ids, chunk identity, ref_cnt, request ids,
   positions) to a buffer handed to a sink every 8192 records. Keeps the
   guard's maps: key -> id, req_id -> id, key -> held chunk. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

typedef struct {
    PyObject_HEAD
    int forward_only;
    PyObject *policy;
    PyObject *m[11];
    PyObject *ids, *reqs, *held, *sink;
    int64_t *buf; Py_ssize_t len, cap, records;
    int64_t next_id, next_req;
} Rec;

enum {GET, INSERT, REMOVE, TOUCH, EVICT, CLEAR, MARK_E, MARK_NE, STORE_MISS, ACCESS, FINISH};
static const char *names[11] = {"get", "insert", "remove", "touch", "evict", "clear",
    "mark_evictable", "mark_non_evictable", "on_store_miss", "on_request_access",
    "on_request_finished"};
static PyObject *s_ref, *s_req_id, *s_positions;

static int grow(Rec *r, Py_ssize_t more) {
    if (r->len + more <= r->cap) return 0;
    Py_ssize_t cap = r->cap ? r->cap : 1 << 16;
    while (cap < r->len + more) cap *= 2;
    int64_t *b = PyMem_Realloc(r->buf, cap * sizeof(int64_t));
    if (!b) { PyErr_NoMemory(); return -1; }
    r->buf = b; r->cap = cap; return 0;
}
#define PUT(r, v) do { if (grow((r), 1) < 0) return NULL; (r)->buf[(r)->len++] = (int64_t)(v); } while (0)
#define PUTI(r, v) do { if (grow((r), 1) < 0) return -1; (r)->buf[(r)->len++] = (int64_t)(v); } while (0)

static int64_t key_id(Rec *r, PyObject *key) {
    PyObject *v = PyDict_GetItemWithError(r->ids, key);
    if (v) return PyLong_AsLongLong(v);
    if (PyErr_Occurred()) return -1;
    PyObject *n = PyLong_FromLongLong(r->next_id);
    if (!n || PyDict_SetItem(r->ids, key, n) < 0) { Py_XDECREF(n); return -1; }
    Py_DECREF(n);
    return r->next_id++;
}

static int64_t ref_of(PyObject *chunk) {
    PyObject *v = PyObject_GetAttr(chunk, s_ref);
    if (!v) { PyErr_Clear(); return -9; }
    int64_t x = PyLong_AsLongLong(v); Py_DECREF(v);
    if (x == -1 && PyErr_Occurred()) { PyErr_Clear(); return -9; }
    return x;
}

static int64_t req_of(Rec *r, PyObject *ctx) {
    if (ctx == NULL || ctx == Py_None) return -1;
    PyObject *name = PyObject_GetAttr(ctx, s_req_id);
    if (!name) { PyErr_Clear(); return -1; }
    PyObject *v = PyDict_GetItemWithError(r->reqs, name);
    int64_t out;
    if (v) out = PyLong_AsLongLong(v);
    else {
        PyObject *n = PyLong_FromLongLong(r->next_req);
        if (!n || PyDict_SetItem(r->reqs, name, n) < 0) { Py_XDECREF(n); Py_DECREF(name); return -2; }
        Py_DECREF(n); out = r->next_req++;
    }
    Py_DECREF(name);
    return out;
}

/* the ids of an iterable of keys (a snapshot), with their positions in ctx */
static int put_keys(Rec *r, PyObject *keys, PyObject *positions) {
    PyObject *it = PyObject_GetIter(keys);
    if (!it) return -1;
    Py_ssize_t at = r->len;
    PUTI(r, 0);
    PyObject *key; int64_t count = 0;
    while ((key = PyIter_Next(it))) {
        int64_t k = key_id(r, key);
        if (k < 0) { Py_DECREF(key); Py_DECREF(it); return -1; }
        PUTI(r, k);
        if (positions) {
            PyObject *p = PyDict_GetItemWithError(positions, key);
            PUTI(r, p ? PyLong_AsLongLong(p) : -1);
        }
        Py_DECREF(key); count++;
    }
    Py_DECREF(it);
    if (PyErr_Occurred()) return -1;
    r->buf[at] = count;
    return 0;
}

static int done(Rec *r) {
    if (++r->records % 8192 == 0 && r->sink != Py_None) {
        PyObject *b = PyBytes_FromStringAndSize((const char *)r->buf, r->len * sizeof(int64_t));
        if (!b) return -1;
        PyObject *res = PyObject_CallOneArg(r->sink, b);
        Py_DECREF(b);
        if (!res) return -1;
        Py_DECREF(res);
        r->len = 0;
    }
    return 0;
}

static PyObject *call(Rec *r, int which, PyObject *const *args, Py_ssize_t n) {
    return PyObject_Vectorcall(r->m[which], args, n, NULL);
}
#define FWD(op) if (r->forward_only) return call(r, op, args, n)

static PyObject *Rec_get(Rec *r, PyObject *const *args, Py_ssize_t n) {
    FWD(GET);
    PyObject *res = call(r, GET, args, n);
    if (!res) return NULL;
    PUT(r, GET); PUT(r, key_id(r, args[0]));
    if (res == Py_None) PUT(r, -1);
    else {
        PyObject *h = PyDict_GetItemWithError(r->held, args[0]);
        PUT(r, h == res ? (int64_t)(intptr_t)res : -2);
        PUT(r, ref_of(res));
    }
    if (done(r) < 0) { Py_DECREF(res); return NULL; }
    return res;
}

static PyObject *Rec_insert(Rec *r, PyObject *const *args, Py_ssize_t n) {
    FWD(INSERT);
    int64_t before = ref_of(args[1]);
    PyObject *res = call(r, INSERT, args, n);
    if (!res) return NULL;
    if (PyDict_SetItem(r->held, args[0], args[1]) < 0) return NULL;
    PUT(r, INSERT); PUT(r, key_id(r, args[0])); PUT(r, (intptr_t)args[1]); PUT(r, before);
    PUT(r, ref_of(args[1])); PUT(r, n > 2 ? req_of(r, args[2]) : -1);
    if (done(r) < 0) return NULL;
    return res;
}

static PyObject *one_key(Rec *r, int op, PyObject *const *args, Py_ssize_t n) {
    FWD(op);
    PyObject *res = call(r, op, args, n);
    if (!res) return NULL;
    PUT(r, op); PUT(r, key_id(r, args[0]));
    if (op == REMOVE) { if (PyDict_DelItem(r->held, args[0]) < 0) PyErr_Clear(); }
    else {
        PyObject *h = PyDict_GetItemWithError(r->held, args[0]);
        PUT(r, h ? ref_of(h) : -9);
    }
    if (done(r) < 0) return NULL;
    return res;
}
static PyObject *Rec_remove(Rec *r, PyObject *const *a, Py_ssize_t n) { return one_key(r, REMOVE, a, n); }
static PyObject *Rec_mark_e(Rec *r, PyObject *const *a, Py_ssize_t n) { return one_key(r, MARK_E, a, n); }
static PyObject *Rec_mark_ne(Rec *r, PyObject *const *a, Py_ssize_t n) { return one_key(r, MARK_NE, a, n); }

static PyObject *keys_call(Rec *r, int op, PyObject *const *args, Py_ssize_t n) {
    FWD(op);
    PyObject *ctx = n > 1 ? args[1] : NULL;
    PUT(r, op); PUT(r, req_of(r, ctx));
    PyObject *positions = NULL;
    if (ctx && ctx != Py_None && op != TOUCH) {
        positions = PyObject_GetAttr(ctx, s_positions);
        if (!positions) PyErr_Clear();
        else if (!PyDict_Check(positions)) Py_CLEAR(positions);
    }
    int bad = put_keys(r, args[0], positions);
    Py_XDECREF(positions);
    if (bad < 0) return NULL;
    PyObject *res = call(r, op, args, n);
    if (!res) return NULL;
    if (done(r) < 0) return NULL;
    return res;
}
static PyObject *Rec_touch(Rec *r, PyObject *const *a, Py_ssize_t n) { return keys_call(r, TOUCH, a, n); }
static PyObject *Rec_store_miss(Rec *r, PyObject *const *a, Py_ssize_t n) { return keys_call(r, STORE_MISS, a, n); }
static PyObject *Rec_access(Rec *r, PyObject *const *a, Py_ssize_t n) { return keys_call(r, ACCESS, a, n); }

static PyObject *Rec_finish(Rec *r, PyObject *const *args, Py_ssize_t n) {
    FWD(FINISH);
    PUT(r, FINISH); PUT(r, req_of(r, args[3]));
    PyObject *it = PyObject_GetIter(args[0]);
    if (!it) return NULL;
    PyObject *group;
    while ((group = PyIter_Next(it))) {
        int bad = put_keys(r, group, NULL);
        Py_DECREF(group);
        if (bad < 0) { Py_DECREF(it); return NULL; }
    }
    Py_DECREF(it);
    if (PyErr_Occurred()) return NULL;
    if (put_keys(r, args[1], NULL) < 0 || put_keys(r, args[2], NULL) < 0) return NULL;
    PyObject *res = call(r, FINISH, args, n);
    if (!res) return NULL;
    if (done(r) < 0) return NULL;
    return res;
}

static PyObject *Rec_evict(Rec *r, PyObject *const *args, Py_ssize_t n) {
    FWD(EVICT);
    PUT(r, EVICT); PUT(r, PyLong_AsLongLong(args[0]));
    if (put_keys(r, args[1], NULL) < 0) return NULL;
    PyObject *res = call(r, EVICT, args, n);
    if (!res) return NULL;
    if (res == Py_None) PUT(r, -1);
    else if (PyList_CheckExact(res)) {
        Py_ssize_t m = PyList_GET_SIZE(res);
        PUT(r, m);
        for (Py_ssize_t i = 0; i < m; i++) {
            PyObject *pair = PyList_GET_ITEM(res, i);
            if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) { PUT(r, -3); continue; }
            PyObject *key = PyTuple_GET_ITEM(pair, 0), *chunk = PyTuple_GET_ITEM(pair, 1);
            PyObject *h = PyDict_GetItemWithError(r->held, key);
            PUT(r, key_id(r, key)); PUT(r, h == chunk ? (intptr_t)chunk : -2); PUT(r, ref_of(chunk));
            if (h && PyDict_DelItem(r->held, key) < 0) return NULL;
        }
    } else PUT(r, -4);
    if (done(r) < 0) { Py_DECREF(res); return NULL; }
    return res;
}

static PyObject *Rec_clear(Rec *r, PyObject *const *args, Py_ssize_t n) {
    FWD(CLEAR);
    PyObject *res = call(r, CLEAR, args, n);
    if (!res) return NULL;
    PyDict_Clear(r->held);
    PUT(r, CLEAR);
    if (done(r) < 0) return NULL;
    return res;
}

static int Rec_init(Rec *r, PyObject *args, PyObject *kw) {
    PyObject *policy, *sink = Py_None;
    r->forward_only = 0;
    if (!PyArg_ParseTuple(args, "O|Oi", &policy, &sink, &r->forward_only)) return -1;
    Py_INCREF(policy); r->policy = policy;
    Py_INCREF(sink); r->sink = sink;
    for (int i = 0; i < 11; i++) {
        r->m[i] = PyObject_GetAttrString(policy, names[i]);
        if (!r->m[i]) return -1;
    }
    r->ids = PyDict_New(); r->reqs = PyDict_New(); r->held = PyDict_New();
    return (r->ids && r->reqs && r->held) ? 0 : -1;
}

static void Rec_dealloc(Rec *r) {
    Py_XDECREF(r->policy); Py_XDECREF(r->sink);
    for (int i = 0; i < 11; i++) Py_XDECREF(r->m[i]);
    Py_XDECREF(r->ids); Py_XDECREF(r->reqs); Py_XDECREF(r->held);
    PyMem_Free(r->buf);
    Py_TYPE(r)->tp_free((PyObject *)r);
}

static PyObject *Rec_getattro(Rec *r, PyObject *name) {
    PyObject *v = PyObject_GenericGetAttr((PyObject *)r, name);
    if (v || !PyErr_ExceptionMatches(PyExc_AttributeError)) return v;
    PyErr_Clear();
    return PyObject_GetAttr(r->policy, name);
}

static PyObject *Rec_records(Rec *r, PyObject *unused) { return PyLong_FromSsize_t(r->records); }

#define M(name, fn) {name, (PyCFunction)(void (*)(void))fn, METH_FASTCALL, NULL}
static PyMethodDef Rec_methods[] = {
    M("get", Rec_get), M("insert", Rec_insert), M("remove", Rec_remove), M("touch", Rec_touch),
    M("evict", Rec_evict), M("clear", Rec_clear), M("mark_evictable", Rec_mark_e),
    M("mark_non_evictable", Rec_mark_ne), M("on_store_miss", Rec_store_miss),
    M("on_request_access", Rec_access), M("on_request_finished", Rec_finish),
    {"records", (PyCFunction)Rec_records, METH_NOARGS, NULL},
    {NULL}
};

static PyTypeObject RecType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "crecord.Recorder", .tp_basicsize = sizeof(Rec), .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew, .tp_init = (initproc)Rec_init, .tp_dealloc = (destructor)Rec_dealloc,
    .tp_methods = Rec_methods, .tp_getattro = (getattrofunc)Rec_getattro,
};

static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "crecord", NULL, -1, NULL};

PyMODINIT_FUNC PyInit_crecord(void) {
    s_ref = PyUnicode_InternFromString("ref_cnt");
    s_req_id = PyUnicode_InternFromString("req_id");
    s_positions = PyUnicode_InternFromString("_offload_key_positions");
    if (PyType_Ready(&RecType) < 0) return NULL;
    PyObject *m = PyModule_Create(&mod);
    if (!m) return NULL;
    Py_INCREF(&RecType);
    PyModule_AddObject(m, "Recorder", (PyObject *)&RecType);
    return m;
}
