# When scikit-build-core builds the wheel (pyproject.toml), the install rules
# that lay it out:
#   matex-activate.pth         site-packages' startup hook (MATEX_ENABLE=1)
#   matex/                     the Python package (pyproject.toml lists it)
#     _matex_ops.so            the TensorFlow op library, when built
#     _build_info.json         what the build found (MatexBuildInfo.cmake)
#     lib/  include/  bin/     libmatexcomm, the interposer, the CMake package
#                              (lib/cmake/matexcomm), matexcomm.pc
#                              (lib/pkgconfig), the headers and the tools
#   matex_torch/               the PyTorch binding (its extension when built)
#   matex_horovod/horovod/     Horovod's API served by matex; on sys.path only
#                              with MATEX_HOROVOD=1 (docs/horovod.md)
#   matex_horovod/bin/         horovodrun, on PATH only through the opt-in line
# The console scripts matexrun, matex-topo, matex-bench and matex-tune
# (pyproject.toml) run the tools in matex/bin.
if(NOT MATEX_PYTHON_WHEEL)
  return()
endif()
install(FILES ${PROJECT_SOURCE_DIR}/tf_integration/python/matex-activate.pth DESTINATION .)
install(FILES ${MATEX_PYTHON_PACKAGE_DIR}/_build_info.json DESTINATION matex)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/horovod_integration/python/matex_horovod DESTINATION . USE_SOURCE_PERMISSIONS
        PATTERN __pycache__ EXCLUDE)
if(MATEX_HAVE_TF)
  install(TARGETS matex_tf_ops LIBRARY DESTINATION matex)
endif()
if(MATEX_HAVE_TORCH)
  install(TARGETS matex_torch_extension LIBRARY DESTINATION matex_torch)
endif()
