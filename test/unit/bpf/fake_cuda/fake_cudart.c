/* A stand-in for libcudart.so (SONAME libcudart.so.12): only cudaLaunchKernel, with the real
 * signature. It does not call the driver's exported cuLaunchKernel, like the real runtime, which
 * reaches the driver through internal entry points: only a probe on cudaLaunchKernel sees it. */
#include <cuda_runtime_api.h>

__attribute__((visibility("default"))) cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim,
								      void **args, size_t sharedMem, cudaStream_t stream)
{
	(void)gridDim; (void)blockDim; (void)args; (void)sharedMem; (void)stream;
	return func ? cudaSuccess : cudaErrorInvalidDeviceFunction;
}
