// The CPython extension `hello_native._core`: wraps the C++ core and reports how it was built.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cstdio>
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
extern "C" int hello_cuda_scale(float* host, float factor, int n);
extern "C" const char* hello_cuda_error_name(int err);
extern "C" const char* hello_cuda_error_string(int err);
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

// Runs the CUDA kernel for real: scales 1024 ones by 3 on the GPU and checks every element.
static PyObject* gpu_check(PyObject*, PyObject*) {
#ifdef HELLO_WITH_CUDA
    const int n = 1024;
    const float factor = 3.0f;
    std::vector<float> data(n, 1.0f);
    int err = 0;
    Py_BEGIN_ALLOW_THREADS
    err = hello_cuda_scale(data.data(), factor, n);
    Py_END_ALLOW_THREADS
    if (err != 0) {
        const char* text = hello_cuda_error_string(err);
        const char* name = hello_cuda_error_name(err);
        PyErr_Format(PyExc_RuntimeError, "gpu_check: cudaError %d: %s (%s)", err,
                     text != nullptr ? text : "unknown error",
                     name != nullptr ? name : "unrecognized error code");
        return nullptr;
    }
    for (int i = 0; i < n; ++i) {
        if (data[i] != factor) {
            char message[128];
            std::snprintf(message, sizeof message,
                          "gpu_check: element %d came back from the GPU as %g, expected %g", i,
                          static_cast<double>(data[i]), static_cast<double>(factor));
            PyErr_SetString(PyExc_RuntimeError, message);
            return nullptr;
        }
    }
    return PyUnicode_FromFormat("scaled %d floats on the GPU: ok", n);
#else
    PyErr_SetString(PyExc_RuntimeError, "hello-native was built without CUDA");
    return nullptr;
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
    {"gpu_check", gpu_check, METH_NOARGS,
     "Scales 1024 floats on the GPU and checks them; RuntimeError on failure or in a CPU build."},
    {"greet", greet, METH_VARARGS, "greet(name) -> str"},
    {"dot", dot, METH_VARARGS, "dot(a, b) -> float"},
    {nullptr, nullptr, 0, nullptr},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_core", nullptr, -1, methods};

PyMODINIT_FUNC PyInit__core(void) { return PyModule_Create(&module); }
