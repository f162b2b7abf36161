# MATEX_WITH_TORCH: AUTO builds the PyTorch backend (torch_integration/) when
# Python can import a torch in the supported range (MATEX_TORCH_MIN_VERSION to
# below MATEX_TORCH_BELOW_VERSION; the API differences inside it are in
# torch_integration/csrc/torch_compat.h) and says why it skips otherwise; ON
# fails the configure step where AUTO would skip; OFF skips. Plain CMake, without find_package(Torch): the pip wheel is a CUDA
# build, and its CMake config probes for nvcc and leaves out torch_python.
# Result: MATEX_HAVE_TORCH, MATEX_TORCH_INCLUDES, MATEX_TORCH_LIBRARY_DIRS,
# MATEX_TORCH_CXX11_ABI, MATEX_TORCH_VERSION and Python3 (Development.Module).
set(MATEX_HAVE_TORCH OFF)
set(MATEX_TORCH_MIN_VERSION 2.11)
set(MATEX_TORCH_BELOW_VERSION 2.16)
if(NOT MATEX_WITH_TORCH STREQUAL "OFF")
  find_package(Python3 COMPONENTS Interpreter Development.Module QUIET)
  if(Python3_Interpreter_FOUND AND Python3_Development.Module_FOUND)
    execute_process(
      COMMAND ${Python3_EXECUTABLE} -c
              "import torch, torch.utils.cpp_extension as e; print(','.join(e.include_paths())); print(','.join(e.library_paths())); print(int(torch._C._GLIBCXX_USE_CXX11_ABI)); print(torch.__version__)"
      OUTPUT_VARIABLE _matex_torch_facts RESULT_VARIABLE _matex_torch_rc ERROR_QUIET
      OUTPUT_STRIP_TRAILING_WHITESPACE)
  endif()
  if(Python3_Interpreter_FOUND AND Python3_Development.Module_FOUND AND _matex_torch_rc EQUAL 0)
    string(REPLACE "\n" ";" _matex_torch_fields "${_matex_torch_facts}")
    list(GET _matex_torch_fields 0 MATEX_TORCH_INCLUDES)
    list(GET _matex_torch_fields 1 MATEX_TORCH_LIBRARY_DIRS)
    list(GET _matex_torch_fields 2 MATEX_TORCH_CXX11_ABI)
    list(GET _matex_torch_fields 3 MATEX_TORCH_VERSION)
    string(REPLACE "," ";" MATEX_TORCH_INCLUDES "${MATEX_TORCH_INCLUDES}")
    string(REPLACE "," ";" MATEX_TORCH_LIBRARY_DIRS "${MATEX_TORCH_LIBRARY_DIRS}")
    string(REGEX MATCH "^[0-9]+\\.[0-9]+(\\.[0-9]+)?" _matex_torch_release "${MATEX_TORCH_VERSION}")
    if(_matex_torch_release VERSION_LESS MATEX_TORCH_MIN_VERSION OR
       NOT _matex_torch_release VERSION_LESS MATEX_TORCH_BELOW_VERSION)
      string(CONCAT _matex_torch_why "PyTorch ${MATEX_TORCH_VERSION} (found by ${Python3_EXECUTABLE}) is outside the range the "
                           "backend builds against, ${MATEX_TORCH_MIN_VERSION} to below ${MATEX_TORCH_BELOW_VERSION} "
                           "(torch_integration/csrc/torch_compat.h)")
      if(MATEX_WITH_TORCH STREQUAL "ON")
        message(FATAL_ERROR "MATEX_WITH_TORCH=ON but ${_matex_torch_why}")
      endif()
      message(STATUS "Skipping torch_integration: ${_matex_torch_why}")
    else()
      set(MATEX_HAVE_TORCH ON)
      message(STATUS "PyTorch ${MATEX_TORCH_VERSION} found by ${Python3_EXECUTABLE}")
    endif()
  elseif(MATEX_WITH_TORCH STREQUAL "ON")
    message(FATAL_ERROR "MATEX_WITH_TORCH=ON but `python3 -c 'import torch'` failed (or Python's headers are missing)")
  else()
    message(STATUS "PyTorch not found: skipping torch_integration")
  endif()
endif()
