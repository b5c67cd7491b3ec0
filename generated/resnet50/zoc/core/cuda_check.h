// Status checks for every CUDA, cuDNN and cuBLAS call in generated code, as returned errors.
//
// The generated forward() is a straight line of library calls, and a failure deep inside it is
// only useful if it says which layer of the user's model and which line of the generated source
// failed, and why. These macros turn a failed status into a zoc::Error (never an exception or an
// exit) and return it from the enclosing function, which may return zoc::Status or any
// zoc::Expected<T>, since both convert from Error. Message format:
//   layer 'layer1.0.conv1' (resnet50.cpp:123): cudnnConvolutionForward(...) failed:
//   CUDNN_STATUS_BAD_PARAM (<cuDNN's own last-error text, when it has one>)
// Kernel faults are reported asynchronously by CUDA, so a sticky error such as
// cudaErrorIllegalAddress names the layer whose call first noticed it, not necessarily the layer
// that caused it; the message says so. Header-only C++17; needs cuda_runtime.h, cudnn.h and
// cublas_v2.h and compiles with g++ and nvcc alike.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstring>
#include <string>
#include <utility>

#include "zoc/core/expected.h"

namespace zoc {

// The enumerator's name, e.g. "CUBLAS_STATUS_NOT_SUPPORTED". Spelled out here rather than taken
// from cublasGetStatusName so that the text does not depend on the cuBLAS version loaded.
inline const char* cublas_status_string(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR:
      return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}

namespace detail {

// "resnet50.cpp" rather than the build machine's absolute path, which means nothing on the GPU
// machine and would make messages differ between checkouts.
inline const char* base_name(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}

// The called function's name followed by "(...)": the full argument text of a generated call
// can run to hundreds of characters, and the line number already locates it.
inline std::string call_name(const char* call_text) {
  const char* paren = std::strchr(call_text, '(');
  if (!paren) return call_text;
  return std::string(call_text, static_cast<size_t>(paren - call_text)) + "(...)";
}

// `layer` may be null or empty for calls that belong to no layer (set-up, copies of the input).
inline Error call_error(const char* layer, const char* file, int line, const char* call_text,
                        const std::string& status_text) {
  // Appended piece by piece: GCC 12 at -O3 in C++20 misreads `"(" + std::string(...)` as an
  // overlapping memcpy (-Wrestrict, GCC bug 105651).
  std::string where = "(";
  where += base_name(file);
  where += ':';
  where += std::to_string(line);
  where += ')';
  std::string message =
      (layer && *layer) ? "layer '" + std::string(layer) + "' " + where : "zoc " + where;
  message += ": " + call_name(call_text) + " failed: " + status_text;
  return Error{std::move(message)};
}

inline std::string cuda_status_text(cudaError_t status) {
  std::string text =
      std::string(cudaGetErrorName(status)) + " (" + cudaGetErrorString(status) + ")";
  switch (status) {  // sticky errors: the context is lost and every later call fails too
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorAssert:
      text +=
          "; a kernel faulted, possibly in an earlier layer (CUDA reports faults "
          "asynchronously); run under compute-sanitizer to find it";
      break;
    default:
      break;
  }
  return text;
}

// cuDNN 9 keeps a thread-local description of its last failure (which descriptor attribute or
// engine rejected what), far more useful than the status name alone. Reading it clears it.
inline std::string cudnn_status_text(cudnnStatus_t status) {
  std::string text = cudnnGetErrorString(status);
  char detail[512] = {0};
  cudnnGetLastErrorString(detail, sizeof(detail));
  if (detail[0] != '\0') text += std::string(" (") + detail + ")";
  return text;
}

}  // namespace detail
}  // namespace zoc

// Each macro evaluates `call` once; on failure it returns a zoc::Error from the enclosing
// function. `layer` is a const char* naming the model layer (or null).
#define ZOC_CUDA(call, layer)                                                               \
  do {                                                                                      \
    const cudaError_t zoc_cuda_status_ = (call);                                            \
    if (zoc_cuda_status_ != cudaSuccess) {                                                  \
      /* clear a non-sticky error so a later cudaGetLastError() does not report it again */ \
      (void)cudaGetLastError();                                                             \
      return ::zoc::detail::call_error((layer), __FILE__, __LINE__, #call,                  \
                                       ::zoc::detail::cuda_status_text(zoc_cuda_status_));  \
    }                                                                                       \
  } while (0)

#define ZOC_CUDNN(call, layer)                                                               \
  do {                                                                                       \
    const cudnnStatus_t zoc_cudnn_status_ = (call);                                          \
    if (zoc_cudnn_status_ != CUDNN_STATUS_SUCCESS) {                                         \
      return ::zoc::detail::call_error((layer), __FILE__, __LINE__, #call,                   \
                                       ::zoc::detail::cudnn_status_text(zoc_cudnn_status_)); \
    }                                                                                        \
  } while (0)

#define ZOC_CUBLAS(call, layer)                                                          \
  do {                                                                                   \
    const cublasStatus_t zoc_cublas_status_ = (call);                                    \
    if (zoc_cublas_status_ != CUBLAS_STATUS_SUCCESS) {                                   \
      return ::zoc::detail::call_error((layer), __FILE__, __LINE__, #call,               \
                                       ::zoc::cublas_status_string(zoc_cublas_status_)); \
    }                                                                                    \
  } while (0)

// ZOC_TRY and ZOC_ASSIGN_OR_RETURN live in zoc/core/expected.h (host code without CUDA uses them).
