/* CRC-32 and Adler-32 on CPython's limited API of 3.9 (Py_LIMITED_API is set by setup.py), so
   the same shared object, named _crc.abi3.so, imports on every CPython from 3.9 on. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

static uint32_t table[256];

static void make_table(void) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        table[n] = c;
    }
}

static PyObject *crc32(PyObject *self, PyObject *args) {
    const unsigned char *data;
    Py_ssize_t size;
    unsigned long start = 0;
    if (!PyArg_ParseTuple(args, "y#|k:crc32", &data, &size, &start))
        return NULL;
    uint32_t c = (uint32_t)start ^ 0xFFFFFFFFu;
    for (Py_ssize_t i = 0; i < size; i++)
        c = table[(c ^ data[i]) & 0xFF] ^ (c >> 8);
    return PyLong_FromUnsignedLong(c ^ 0xFFFFFFFFu);
}

static PyObject *adler32(PyObject *self, PyObject *args) {
    const unsigned char *data;
    Py_ssize_t size;
    unsigned long start = 1;
    if (!PyArg_ParseTuple(args, "y#|k:adler32", &data, &size, &start))
        return NULL;
    uint32_t a = start & 0xFFFF, b = (start >> 16) & 0xFFFF;
    for (Py_ssize_t i = 0; i < size; i++) {
        a = (a + data[i]) % 65521u;
        b = (b + a) % 65521u;
    }
    return PyLong_FromUnsignedLong((b << 16) | a);
}

static PyMethodDef methods[] = {
    {"crc32", crc32, METH_VARARGS, "crc32(data, start=0) -> int: CRC-32 of data (as zlib)."},
    {"adler32", adler32, METH_VARARGS, "adler32(data, start=1) -> int: Adler-32 (as zlib)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_crc", NULL, -1, methods};

PyMODINIT_FUNC PyInit__crc(void) {
    make_table();
    return PyModule_Create(&module);
}
