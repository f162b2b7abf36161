// tf_compat.h - the one place where the op library meets differences between
// the TensorFlow releases it supports (cmake/MatexFrameworkVersions.cmake:
// 2.16 to 2.21). Each difference is tested by what the installed headers
// offer (__has_include), not by version numbers, so a release that moves a
// header fails here, at compile time, with the name of what moved.
#pragma once

// XLA's op builder: xla/client/ up to TensorFlow 2.18, xla/hlo/builder/ since 2.19.
#if __has_include("xla/hlo/builder/xla_builder.h")
#include "xla/hlo/builder/xla_builder.h"
#elif __has_include("xla/client/xla_builder.h")
#include "xla/client/xla_builder.h"
#else
#error "matex: this TensorFlow has XLA's xla_builder.h in neither xla/hlo/builder/ nor xla/client/"
#endif
