/* numpy-abi: sums a float64 array through numpy's C API (PyArray_*), so the module is bound
 * to the ABI of the numpy it was compiled against. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

static PyObject *total(PyObject *self, PyObject *arg) {
    PyArrayObject *array = (PyArrayObject *)PyArray_FROM_OTF(arg, NPY_DOUBLE, NPY_ARRAY_IN_ARRAY);
    if (array == NULL) {
        return NULL;
    }
    const double *data = (const double *)PyArray_DATA(array);
    npy_intp count = PyArray_SIZE(array);
    double sum = 0.0;
    for (npy_intp i = 0; i < count; i++) {
        sum += data[i];
    }
    Py_DECREF(array);
    return PyFloat_FromDouble(sum);
}

static PyObject *built_with(PyObject *self, PyObject *unused) {
    return PyUnicode_FromString(BUILT_WITH_NUMPY);
}

static PyMethodDef methods[] = {
    {"total", total, METH_O, "Sum of the elements of an array-like, as float64."},
    {"built_with", built_with, METH_NOARGS, "The numpy version this module was compiled against."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_core", NULL, -1, methods};

PyMODINIT_FUNC PyInit__core(void) {
    import_array();
    return PyModule_Create(&module);
}
