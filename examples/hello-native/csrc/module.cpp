// The CPython extension `hello_native._core`: wraps the C++ core and reports how it was built.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdexcept>
#include <string>  // brings in libstdc++'s c++config.h, which defines _GLIBCXX_USE_CXX11_ABI
#include <vector>

#include "core.h"

#ifndef HELLO_VARIANT
#define HELLO_VARIANT "unknown"
#endif
#ifndef HELLO_VERSION
#define HELLO_VERSION "0"
#endif

#ifdef HELLO_WITH_CUDA
extern "C" int hello_cuda_runtime_version(void);
extern "C" int hello_cuda_device_count(void);
#endif

static PyObject* build_info(PyObject*, PyObject*) {
#ifdef HELLO_WITH_CUDA
    int v = hello_cuda_runtime_version();
    PyObject* cuda = PyUnicode_FromFormat("%d.%d", v / 1000, (v % 1000) / 10);
#else
    PyObject* cuda = Py_NewRef(Py_None);
#endif
#if defined(_GLIBCXX_USE_CXX11_ABI) && _GLIBCXX_USE_CXX11_ABI
    PyObject* abi = Py_True;
#else
    PyObject* abi = Py_False;
#endif
    return Py_BuildValue("{s:s,s:N,s:O,s:s,s:s}", "variant", HELLO_VARIANT, "cuda", cuda,
                         "cxx11_abi", abi, "version", HELLO_VERSION, "compiler", __VERSION__);
}

static PyObject* device_count(PyObject*, PyObject*) {
#ifdef HELLO_WITH_CUDA
    return PyLong_FromLong(hello_cuda_device_count());
#else
    return PyLong_FromLong(0);
#endif
}

static PyObject* greet(PyObject*, PyObject* args) {
    const char* name = nullptr;
    if (!PyArg_ParseTuple(args, "s", &name)) {
        return nullptr;
    }
    return PyUnicode_FromString(hello::greet(name).c_str());
}

static bool to_vector(PyObject* seq, std::vector<double>& out) {
    PyObject* fast = PySequence_Fast(seq, "dot: expected a sequence of numbers");
    if (fast == nullptr) {
        return false;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    out.reserve(static_cast<size_t>(n));
    for (Py_ssize_t i = 0; i < n; ++i) {
        double x = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(fast, i));
        if (x == -1.0 && PyErr_Occurred()) {
            Py_DECREF(fast);
            return false;
        }
        out.push_back(x);
    }
    Py_DECREF(fast);
    return true;
}

static PyObject* dot(PyObject*, PyObject* args) {
    PyObject *a = nullptr, *b = nullptr;
    if (!PyArg_ParseTuple(args, "OO", &a, &b)) {
        return nullptr;
    }
    std::vector<double> va, vb;
    if (!to_vector(a, va) || !to_vector(b, vb)) {
        return nullptr;
    }
    try {
        return PyFloat_FromDouble(hello::dot(va, vb));
    } catch (const std::invalid_argument& exc) {
        PyErr_SetString(PyExc_ValueError, exc.what());
        return nullptr;
    }
}

static PyMethodDef methods[] = {
    {"build_info", build_info, METH_NOARGS, "How this module was built."},
    {"device_count", device_count, METH_NOARGS, "CUDA devices visible (0 in a CPU build)."},
    {"greet", greet, METH_VARARGS, "greet(name) -> str"},
    {"dot", dot, METH_VARARGS, "dot(a, b) -> float"},
    {nullptr, nullptr, 0, nullptr},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_core", nullptr, -1, methods};

PyMODINIT_FUNC PyInit__core(void) { return PyModule_Create(&module); }
