// Device memory ownership and the argument checks at the generated model's public boundary.
//
// The generated constructor allocates a handful of large buffers (weights, the activation arena,
// the cuDNN workspace) and must free them on every path, including a failure halfway through
// create(): DeviceBuffer is the RAII owner that makes that automatic, with allocation errors as
// values naming what was being allocated and how much memory was free. forward() takes raw
// pointers and a batch size from the caller; a host pointer or an out-of-range batch would
// otherwise surface as an illegal-address fault in some later kernel or as a cuDNN BAD_PARAM
// naming the wrong thing, so check_device_pointer and check_batch reject them up front with
// messages in the caller's terms. Header-only C++17 on the CUDA runtime API (g++ or nvcc).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdio>
#include <string>
#include <utility>

#include "zoc/core/expected.h"

namespace zoc {

namespace detail {

// "102760448 bytes (98.0 MiB)": exact for logs, readable for people.
inline std::string bytes_text(size_t bytes) {
  char mib[48];
  std::snprintf(mib, sizeof(mib), " (%.1f MiB)", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return std::to_string(bytes) + " bytes" + mib;
}

}  // namespace detail

// One cudaMalloc'd block, freed when the owner goes away. Move-only; an empty buffer (default
// constructed, moved from, or allocated with 0 bytes) holds nullptr.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : ptr_(std::exchange(other.ptr_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      reset();
      ptr_ = std::exchange(other.ptr_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // `what` names the buffer in the error ("activation arena", "weights of layer1.0.conv1").
  static Expected<DeviceBuffer> allocate(size_t bytes, const char* what) {
    DeviceBuffer buffer;
    if (bytes == 0) return Expected<DeviceBuffer>(std::move(buffer));
    cudaError_t status = cudaMalloc(&buffer.ptr_, bytes);
    if (status != cudaSuccess) {
      buffer.ptr_ = nullptr;
      // A failed cudaMalloc also sets the "last error"; clear it, or the next launch check
      // (cudaGetLastError after a kernel) would report this allocation as a kernel failure.
      (void)cudaGetLastError();
      std::string message = "cannot allocate " + detail::bytes_text(bytes) +
                            " of device memory for " + (what ? what : "a buffer") + ": " +
                            cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")";
      size_t free_bytes = 0, total_bytes = 0;
      if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) {
        message +=
            "; " + detail::bytes_text(free_bytes) + " free of " + detail::bytes_text(total_bytes);
      } else {
        (void)cudaGetLastError();
      }
      return Error{std::move(message)};
    }
    buffer.size_ = bytes;
    // Spelled out: nvcc's front end does not apply the implicit move to a converting return.
    return Expected<DeviceBuffer>(std::move(buffer));
  }

  void* get() const { return ptr_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t size() const { return size_; }
  bool empty() const { return ptr_ == nullptr; }

  // Frees now. cudaFree synchronizes the device, so owners should not call this per forward.
  // Its status is ignored: a destructor cannot report it, and after a sticky error the memory
  // is gone with the context anyway.
  void reset() {
    if (ptr_) (void)cudaFree(ptr_);
    ptr_ = nullptr;
    size_ = 0;
  }

 private:
  void* ptr_ = nullptr;
  size_t size_ = 0;
};

// Accepts memory that kernels on the current device can read directly: cudaMalloc'd memory of
// the current device, and managed memory. Rejects null, pageable host memory (malloc, new,
// std::vector) and pinned host memory (cudaMallocHost), which would either fault or make every
// access cross PCIe. `what` names the argument ("input of Resnet50::forward").
inline Status check_device_pointer(const void* p, const char* what) {
  const char* const name = what ? what : "pointer";  // a std::string only on the error path
  if (p == nullptr) return Error{std::string(name) + ": null pointer"};
  cudaPointerAttributes attributes{};
  cudaError_t status = cudaPointerGetAttributes(&attributes, p);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();  // older drivers flag unregistered host memory this way
    if (status == cudaErrorInvalidValue) {
      return Error{std::string(name) + " is a host pointer, a device pointer is required"};
    }
    return Error{std::string(name) + ": cudaPointerGetAttributes failed: " +
                 cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")"};
  }
  switch (attributes.type) {
    case cudaMemoryTypeManaged:
      return Status();
    case cudaMemoryTypeDevice: {
      int current = 0;
      if (cudaGetDevice(&current) != cudaSuccess) {
        (void)cudaGetLastError();
        return Status();  // cannot tell; the library calls will report a real problem
      }
      if (attributes.device != current) {
        return Error{std::string(name) + " is memory of device " +
                     std::to_string(attributes.device) + ", but the model runs on device " +
                     std::to_string(current)};
      }
      return Status();
    }
    case cudaMemoryTypeHost:
      return Error{std::string(name) +
                   " is a host pointer (page-locked), a device pointer is required"};
    case cudaMemoryTypeUnregistered:
    default:
      return Error{std::string(name) + " is a host pointer, a device pointer is required"};
  }
}

// forward()'s batch must lie in 1..max_batch: the arena, workspaces and cuDNN plans were sized
// for max_batch at construction.
inline Status check_batch(int batch, int max_batch) {
  if (batch < 1 || batch > max_batch) {
    return Error{"batch " + std::to_string(batch) + " is out of range 1.." +
                 std::to_string(max_batch) + " (the maximum batch given at construction)"};
  }
  return Status();
}

// The current device's name ("NVIDIA H200"), as plan files (zoc/cudnn/plan_file.h) record it.
inline Status gpu_name(std::string* out) {
  int device = 0;
  cudaDeviceProp prop{};
  cudaError_t e = cudaGetDevice(&device);
  if (e == cudaSuccess) e = cudaGetDeviceProperties(&prop, device);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return Error{std::string("cannot read the GPU's name: ") + cudaGetErrorString(e)};
  }
  *out = prop.name;
  return Status();
}

}  // namespace zoc
