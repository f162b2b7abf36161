// host_kernel_registration.h - registers a matex kernel for TensorFlow's
// devices: the CPU always and, in builds with MATEX_TF_GPU_KERNELS, the GPU
// too, with the named input and output in host memory (TensorFlow copies the
// tensors down and up around the CPU kernel: the engine works on host buffers).
#pragma once

#include "tensorflow/core/framework/op_kernel.h"

#ifdef MATEX_TF_GPU_KERNELS
#define MATEX_REGISTER_HOST_KERNEL(op_name, input, output, Kernel)                      \
  REGISTER_KERNEL_BUILDER(Name(op_name).Device(tensorflow::DEVICE_CPU), Kernel);        \
  REGISTER_KERNEL_BUILDER(Name(op_name).Device(tensorflow::DEVICE_GPU).HostMemory(input).HostMemory(output), Kernel)
#else
#define MATEX_REGISTER_HOST_KERNEL(op_name, input, output, Kernel) \
  REGISTER_KERNEL_BUILDER(Name(op_name).Device(tensorflow::DEVICE_CPU), Kernel)
#endif
