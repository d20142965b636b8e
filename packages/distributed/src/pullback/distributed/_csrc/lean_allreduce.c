/* The lean all-reduce of pullback.distributed in C: one call per synchronous all-reduce of a
 * contiguous CPU array, through the MPI library that mpi4py loaded.
 *
 * Why: mpi4py's Comm.Allreduce parses its arguments into message objects on every call (0.85
 * us in one process here, against 0.34 us for this whole call), and the Python around it
 * (checks, the watchdog's timestamp) cost as much again: a 1 KB all-reduce was 0.82-0.85 of
 * raw mpi4py's bandwidth. This file makes Python builtins (METH_FASTCALL) that take the array
 * itself and check it through the buffer protocol, so no argument can crash the process:
 * anything that is not a writable C-contiguous buffer of a format MPI reduces natively is
 * refused (False), and the caller takes its general path.
 *
 * In raise mode the wait for a non-blocking call is here too (the loop of
 * pullback.distributed._backend.poll, without the GIL). No mpi.h: MPI's functions, handles and
 * MPI_IN_PLACE come from mpi4py as addresses and integers, and a handle is either an int (MPICH
 * and its derivatives) or a pointer (Open MPI), told apart by its size. The loader
 * (pullback/distributed/_native.py) puts this interpreter's headers on the include path.
 */
#include <Python.h> /* first, as Python asks */
#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

typedef int (*allreduce_int)(const void *, void *, int, int, int, int);
typedef int (*allreduce_ptr)(const void *, void *, int, void *, void *, void *);
typedef int (*iallreduce_int)(const void *, void *, int, int, int, int, int *);
typedef int (*iallreduce_ptr)(const void *, void *, int, void *, void *, void *, void **);
typedef int (*test_int)(int *, int *, void *);
typedef int (*test_ptr)(void **, int *, void *);

#define N_OPS 8
#define STATUS_BYTES 256

typedef struct {
    void *allreduce, *iallreduce, *test;
    void *in_place;
    intptr_t comm;
    intptr_t op[N_OPS];
    /* MPI datatype and item size by buffer format character ("f", "d", "l", ...); item size 0:
     * not reduced here. */
    intptr_t datatype[128];
    Py_ssize_t itemsize[128];
    int n_ops;
    int handle_size;  /* 4: int handles; 8: pointer handles */
    int blocking;     /* 1: MPI_Allreduce (abort mode); 0: MPI_Iallreduce and a timed poll */
    /* The running blocking call, for the group's watchdog thread: its start (CLOCK_MONOTONIC
     * seconds; 0 when none runs) and its op's index. Written by the calling thread before it
     * releases the GIL and after it takes it back, read by running() under the GIL. */
    volatile double since;
    volatile int op_index;
    /* The non-blocking call's wait, as pullback.distributed._backend.poll's: how long, the
     * tests before the deadline starts, and the tests between two yields of the processor. */
    double timeout;
    int eager_tests, tests_per_yield;
    union {
        int handle;
        void *pointer;
    } request;
    unsigned char status[STATUS_BYTES];
} lean_state;

static const char CAPSULE[] = "pullback.distributed.lean_allreduce";

static double monotonic(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static lean_state *state_of(PyObject *self) {
    return (lean_state *)PyCapsule_GetPointer(self, CAPSULE);
}

/* The table index of a buffer format: one character of native order ("f", "l", or with "@"
 * or "=" ahead), of the table's item size; -1 when not reduced here (other byte orders,
 * float16, bool, structures). */
static int format_index(const char *format, const lean_state *s, Py_ssize_t itemsize) {
    if (format == NULL)
        return -1;
    if (format[0] == '@' || format[0] == '=')
        format++;
    unsigned char c = (unsigned char)format[0];
    if (c >= 128 || format[1] != '\0' || s->itemsize[c] == 0 || s->itemsize[c] != itemsize)
        return -1;
    return (int)c;
}

static int test(lean_state *s, int *done) {
    if (s->handle_size == 4)
        return ((test_int)s->test)(&s->request.handle, done, s->status);
    return ((test_ptr)s->test)(&s->request.pointer, done, s->status);
}

/* Test the started request until it is done or the timeout has passed (done stays 0): MPI
 * progresses it only inside its calls. Called without the GIL. */
static int poll(lean_state *s, int *done) {
    int rc = 0;
    for (int i = 0; i < s->eager_tests && rc == 0 && !*done; i++)
        rc = test(s, done);
    double deadline = monotonic() + s->timeout;
    while (rc == 0 && !*done) {
        for (int i = 0; i < s->tests_per_yield && rc == 0 && !*done; i++)
            rc = test(s, done);
        if (rc != 0 || *done || monotonic() > deadline)
            break;
        sched_yield();  /* a peer rank sharing this core runs */
    }
    return rc;
}

/* reduce(array, op_index): True once reduced in place; False when not covered (nothing was
 * done); an int, MPI's error code; None when the non-blocking call did not complete within
 * the timeout (the caller raises; the request is left to the broken group). */
static PyObject *lean_reduce(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    lean_state *s = state_of(self);
    if (s == NULL)
        return NULL;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "reduce(array, op_index) takes 2 arguments");
        return NULL;
    }
    long op_index = PyLong_AsLong(args[1]);
    if (op_index == -1 && PyErr_Occurred())
        return NULL;
    if (op_index < 0 || op_index >= s->n_ops)
        Py_RETURN_FALSE;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT)
        != 0) {
        PyErr_Clear();  /* read-only, strided, or no buffer at all: the general path says why */
        Py_RETURN_FALSE;
    }
    int c = format_index(view.format, s, view.itemsize);
    Py_ssize_t count = c < 0 ? 0 : view.len / view.itemsize;
    if (c < 0 || count > INT_MAX) {  /* mpi4py's general path has the large-count calls */
        PyBuffer_Release(&view);
        Py_RETURN_FALSE;
    }
    intptr_t datatype = s->datatype[c], op = s->op[op_index];
    int rc, done = 1;
    if (s->blocking) {
        s->op_index = (int)op_index;
        s->since = monotonic();
        Py_BEGIN_ALLOW_THREADS
        if (s->handle_size == 4)
            rc = ((allreduce_int)s->allreduce)(s->in_place, view.buf, (int)count, (int)datatype,
                                               (int)op, (int)s->comm);
        else
            rc = ((allreduce_ptr)s->allreduce)(s->in_place, view.buf, (int)count,
                                               (void *)datatype, (void *)op, (void *)s->comm);
        Py_END_ALLOW_THREADS
        s->since = 0.0;
    } else {
        if (s->handle_size == 4)
            rc = ((iallreduce_int)s->iallreduce)(s->in_place, view.buf, (int)count, (int)datatype,
                                                 (int)op, (int)s->comm, &s->request.handle);
        else
            rc = ((iallreduce_ptr)s->iallreduce)(s->in_place, view.buf, (int)count,
                                                 (void *)datatype, (void *)op, (void *)s->comm,
                                                 &s->request.pointer);
        if (rc == 0)
            rc = test(s, &done);  /* a small message is done here: no clock, no GIL release */
        if (rc == 0 && !done) {
            Py_BEGIN_ALLOW_THREADS
            rc = poll(s, &done);
            Py_END_ALLOW_THREADS
        }
    }
    PyBuffer_Release(&view);
    if (rc != 0)
        return PyLong_FromLong(rc);
    if (!done)
        Py_RETURN_NONE;
    Py_RETURN_TRUE;
}

/* running(): (seconds the blocking call has run, 0.0 if none runs; its op's index). */
static PyObject *lean_running(PyObject *self, PyObject *unused) {
    lean_state *s = state_of(self);
    if (s == NULL)
        return NULL;
    double since = s->since;
    int op_index = s->op_index;
    return Py_BuildValue("(di)", since > 0.0 ? monotonic() - since : 0.0, op_index);
}

static PyMethodDef REDUCE = {"reduce", (PyCFunction)(void (*)(void))lean_reduce, METH_FASTCALL,
                             "reduce(array, op_index) -> True | False | None | MPI error code"};
static PyMethodDef RUNNING = {"running", lean_running, METH_NOARGS,
                              "running() -> (seconds, op_index) of the blocking call"};

static void free_state(PyObject *capsule) {
    PyMem_Free(PyCapsule_GetPointer(capsule, CAPSULE));
}

/* The integer at sequence[i] as an address or handle (an int or a pointer, either sign). */
static int address(PyObject *sequence, Py_ssize_t i, intptr_t *out) {
    PyObject *item = PySequence_GetItem(sequence, i);
    if (item == NULL)
        return -1;
    void *value = PyLong_AsVoidPtr(item);
    Py_DECREF(item);
    if (value == NULL && PyErr_Occurred())
        return -1;
    *out = (intptr_t)value;
    return 0;
}

static int fill(lean_state *s, PyObject *functions, PyObject *ops, const char *formats,
                PyObject *datatypes, PyObject *itemsizes) {
    intptr_t fn[3];
    for (Py_ssize_t i = 0; i < 3; i++)
        if (address(functions, i, &fn[i]) != 0)
            return -1;
    s->allreduce = (void *)fn[0];
    s->iallreduce = (void *)fn[1];
    s->test = (void *)fn[2];
    for (Py_ssize_t i = 0; i < s->n_ops; i++)
        if (address(ops, i, &s->op[i]) != 0)
            return -1;
    for (Py_ssize_t i = 0; formats[i] != '\0'; i++) {
        unsigned char c = (unsigned char)formats[i];
        intptr_t size;
        if (c >= 128 || address(datatypes, i, &s->datatype[c]) != 0
            || address(itemsizes, i, &size) != 0)
            return -1;
        if (size <= 0) {
            PyErr_SetString(PyExc_ValueError, "lean all-reduce: item sizes must be positive");
            return -1;
        }
        s->itemsize[c] = (Py_ssize_t)size;
    }
    return 0;
}

/* make((functions, comm, in_place, ops, formats, datatypes, itemsizes, handle_size, status_size,
 * blocking, timeout, eager_tests, tests_per_yield)) -> (reduce, running): two builtins sharing
 * one state. functions: the
 * addresses of MPI_Allreduce, MPI_Iallreduce and MPI_Test; ops: the op handles by index;
 * formats: the buffer format characters reduced here, with their datatype handles and item
 * sizes at the same positions of datatypes and itemsizes. */
PyObject *pullback_lean_allreduce_make(PyObject *config) {
    PyObject *functions, *comm, *in_place, *ops, *datatypes, *itemsizes;
    const char *formats;
    int handle_size, status_size, blocking, eager_tests, tests_per_yield;
    double timeout;
    if (!PyArg_ParseTuple(config, "OOOOsOOiipdii", &functions, &comm, &in_place, &ops, &formats,
                          &datatypes, &itemsizes, &handle_size, &status_size, &blocking, &timeout,
                          &eager_tests, &tests_per_yield))
        return NULL;
    Py_ssize_t n_ops = PySequence_Size(ops), n_formats = (Py_ssize_t)strlen(formats);
    if (n_ops < 0 || PySequence_Size(functions) != 3 || n_ops > N_OPS
        || PySequence_Size(datatypes) != n_formats || PySequence_Size(itemsizes) != n_formats
        || (handle_size != 4 && handle_size != 8) || status_size <= 0
        || status_size > STATUS_BYTES || !(timeout > 0.0) || eager_tests < 0
        || tests_per_yield < 1) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "lean all-reduce: bad configuration (3 functions, at "
                     "most %d ops, one datatype and item size per format, handles of 4 or 8 "
                     "bytes, a status of at most %d bytes, a positive timeout and test counts)",
                     N_OPS, STATUS_BYTES);
        return NULL;
    }
    lean_state *s = PyMem_Calloc(1, sizeof(lean_state));
    if (s == NULL)
        return PyErr_NoMemory();
    s->n_ops = (int)n_ops;
    s->handle_size = handle_size;
    s->blocking = blocking;
    s->timeout = timeout;
    s->eager_tests = eager_tests;
    s->tests_per_yield = tests_per_yield;
    intptr_t comm_handle = 0, in_place_address = 0;
    PyObject *pair = PyTuple_Pack(2, comm, in_place);
    if (pair == NULL || fill(s, functions, ops, formats, datatypes, itemsizes) != 0
        || address(pair, 0, &comm_handle) != 0 || address(pair, 1, &in_place_address) != 0) {
        Py_XDECREF(pair);
        PyMem_Free(s);
        return NULL;
    }
    Py_DECREF(pair);
    s->comm = comm_handle;
    s->in_place = (void *)in_place_address;
    PyObject *capsule = PyCapsule_New(s, CAPSULE, free_state);
    if (capsule == NULL) {
        PyMem_Free(s);
        return NULL;
    }
    PyObject *reduce = PyCFunction_New(&REDUCE, capsule);
    PyObject *running = PyCFunction_New(&RUNNING, capsule);
    Py_DECREF(capsule);  /* the functions hold it */
    PyObject *result = NULL;
    if (reduce != NULL && running != NULL)
        result = PyTuple_Pack(2, reduce, running);
    Py_XDECREF(reduce);
    Py_XDECREF(running);
    return result;
}
