// The CUDA part, compiled by nvcc for CUDA cells only.  Nothing here needs a GPU at import time:
// the runtime is linked statically and only asked for devices when device_count() is called.
#include <cuda_runtime.h>

__global__ void scale_kernel(float* data, float factor, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        data[i] *= factor;
    }
}

extern "C" int hello_cuda_runtime_version(void) { return CUDART_VERSION; }

extern "C" int hello_cuda_device_count(void) {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        return 0;
    }
    return count;
}

// Scales `n` floats on the first GPU; returns 0 on success, the CUDA error code otherwise.
extern "C" int hello_cuda_scale(float* host, float factor, int n) {
    float* device = nullptr;
    size_t bytes = sizeof(float) * static_cast<size_t>(n);
    cudaError_t err = cudaMalloc(&device, bytes);
    if (err == cudaSuccess) err = cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice);
    if (err == cudaSuccess) {
        scale_kernel<<<(n + 255) / 256, 256>>>(device, factor, n);
        err = cudaGetLastError();
    }
    if (err == cudaSuccess) err = cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost);
    cudaFree(device);
    return static_cast<int>(err);
}

// The runtime's own name and text for a code hello_cuda_scale returned (static strings).
extern "C" const char* hello_cuda_error_name(int err) {
    return cudaGetErrorName(static_cast<cudaError_t>(err));
}

extern "C" const char* hello_cuda_error_string(int err) {
    return cudaGetErrorString(static_cast<cudaError_t>(err));
}
