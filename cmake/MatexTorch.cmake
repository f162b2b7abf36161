# MATEX_WITH_TORCH: AUTO builds the PyTorch backend (torch_integration/) when
# the Python the package is built for imports a torch in the supported range
# (MatexFrameworkVersions.cmake; the API differences inside it are in
# torch_integration/csrc/torch_compat.h) and says why it skips otherwise; ON
# fails the configure step where AUTO would skip; OFF skips. Plain CMake,
# without find_package(Torch): the pip wheel is a CUDA build, and its CMake
# config probes for nvcc and leaves out torch_python.
# Result: MATEX_HAVE_TORCH, MATEX_TORCH_INCLUDES, MATEX_TORCH_LIBRARY_DIRS,
# MATEX_TORCH_CXX11_ABI, MATEX_TORCH_VERSION, MATEX_TORCH_WHY (why it was
# skipped) and Python3 (Development.Module).
set(MATEX_HAVE_TORCH OFF)
set(MATEX_TORCH_WHY "")
if(MATEX_WITH_TORCH STREQUAL "OFF")
  set(MATEX_TORCH_WHY "MATEX_WITH_TORCH=0")
else()
  find_package(Python3 COMPONENTS Interpreter Development.Module QUIET)
  if(Python3_Interpreter_FOUND AND Python3_Development.Module_FOUND)
    matex_python_probe(_matex_torch_facts _matex_torch_rc
      "import torch, torch.utils.cpp_extension as e; print(','.join(e.include_paths())); print(','.join(e.library_paths())); print(int(torch._C._GLIBCXX_USE_CXX11_ABI)); print(torch.__version__)")
  endif()
  if(NOT Python3_Interpreter_FOUND OR NOT Python3_Development.Module_FOUND)
    set(MATEX_TORCH_WHY "no Python interpreter with its development headers (Python.h) found")
  elseif(NOT _matex_torch_rc EQUAL 0)
    set(MATEX_TORCH_WHY "`${Python3_EXECUTABLE} -c 'import torch'` failed (${_matex_torch_facts_ERROR})")
  else()
    string(REPLACE "\n" ";" _matex_torch_fields "${_matex_torch_facts}")
    list(GET _matex_torch_fields 0 MATEX_TORCH_INCLUDES)
    list(GET _matex_torch_fields 1 MATEX_TORCH_LIBRARY_DIRS)
    list(GET _matex_torch_fields 2 MATEX_TORCH_CXX11_ABI)
    list(GET _matex_torch_fields 3 MATEX_TORCH_VERSION)
    string(REPLACE "," ";" MATEX_TORCH_INCLUDES "${MATEX_TORCH_INCLUDES}")
    string(REPLACE "," ";" MATEX_TORCH_LIBRARY_DIRS "${MATEX_TORCH_LIBRARY_DIRS}")
    matex_version_in_range(_matex_torch_ok "${MATEX_TORCH_VERSION}" ${MATEX_TORCH_MIN_VERSION}
                           ${MATEX_TORCH_BELOW_VERSION})
    if(_matex_torch_ok)
      set(MATEX_HAVE_TORCH ON)
      message(STATUS "PyTorch ${MATEX_TORCH_VERSION} found by ${Python3_EXECUTABLE}")
    else()
      string(CONCAT MATEX_TORCH_WHY "PyTorch ${MATEX_TORCH_VERSION} (found by ${Python3_EXECUTABLE}) is outside "
                    "the supported range, ${MATEX_TORCH_MIN_VERSION} to below ${MATEX_TORCH_BELOW_VERSION}")
    endif()
  endif()
  if(NOT MATEX_HAVE_TORCH)
    matex_binding_skipped(MATEX_WITH_TORCH "PyTorch binding" "${MATEX_TORCH_WHY}")
  endif()
endif()
