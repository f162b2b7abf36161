// gpu_kernels_main.cc - runs the kernel tests when this process can use a GPU;
// otherwise prints the reason ctest recognises as a skip.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "gpu/device_pointer.h"

int main(int argc, char** argv) {
  std::string why;
  if (matexcomm::gpu::usable_device_count(&why) == 0) {
    std::printf("SKIPPED: no GPU (%s)\n", why.c_str());
    return 0;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
