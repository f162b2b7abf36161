# MATEX_WITH_TF: AUTO builds the TensorFlow op library when Python can import
# tensorflow; ON fails the configure step when it cannot; OFF skips.
# Result: MATEX_HAVE_TF (ON/OFF), MATEX_TF_CFLAGS, MATEX_TF_LFLAGS and
# MATEX_TF_HAS_CUDA (whether the installed TensorFlow was built with CUDA).
set(MATEX_HAVE_TF OFF)
if(NOT MATEX_WITH_TF STREQUAL "OFF")
  find_package(Python3 COMPONENTS Interpreter QUIET)
  if(Python3_Interpreter_FOUND)
    execute_process(
      COMMAND ${Python3_EXECUTABLE} -c
              "import tensorflow as tf; print(' '.join(tf.sysconfig.get_compile_flags())); print(' '.join(tf.sysconfig.get_link_flags())); print(int(tf.test.is_built_with_cuda()))"
      OUTPUT_VARIABLE _matex_tf_flags RESULT_VARIABLE _matex_tf_rc ERROR_QUIET
      OUTPUT_STRIP_TRAILING_WHITESPACE)
  endif()
  if(Python3_Interpreter_FOUND AND _matex_tf_rc EQUAL 0)
    string(REPLACE "\n" ";" _matex_tf_lines "${_matex_tf_flags}")
    list(GET _matex_tf_lines 0 MATEX_TF_CFLAGS)
    list(GET _matex_tf_lines 1 MATEX_TF_LFLAGS)
    list(GET _matex_tf_lines 2 MATEX_TF_HAS_CUDA)
    set(MATEX_HAVE_TF ON)
    message(STATUS "TensorFlow found by ${Python3_EXECUTABLE} (built with CUDA: ${MATEX_TF_HAS_CUDA})")
  elseif(MATEX_WITH_TF STREQUAL "ON")
    message(FATAL_ERROR "MATEX_WITH_TF=ON but `python3 -c 'import tensorflow'` failed")
  else()
    message(STATUS "TensorFlow not found: skipping tf_integration")
  endif()
endif()
