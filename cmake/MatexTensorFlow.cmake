# MATEX_WITH_TF: AUTO builds the TensorFlow op library when the Python the
# package is built for imports a tensorflow in the supported range
# (MatexFrameworkVersions.cmake) and says why it skips otherwise; ON fails the
# configure step where AUTO would skip; OFF skips.
# Result: MATEX_HAVE_TF (ON/OFF), MATEX_TF_CFLAGS, MATEX_TF_LFLAGS,
# MATEX_TF_HAS_CUDA (whether the installed TensorFlow was built with CUDA),
# MATEX_TF_VERSION, MATEX_KERAS_VERSION and MATEX_TF_WHY (why it was skipped).
set(MATEX_HAVE_TF OFF)
set(MATEX_TF_WHY "")
if(MATEX_WITH_TF STREQUAL "OFF")
  set(MATEX_TF_WHY "MATEX_WITH_TF=0")
else()
  find_package(Python3 COMPONENTS Interpreter QUIET)
  if(Python3_Interpreter_FOUND)
    matex_python_probe(_matex_tf_flags _matex_tf_rc
      "import tensorflow as tf; print(' '.join(tf.sysconfig.get_compile_flags())); print(' '.join(tf.sysconfig.get_link_flags())); print(int(tf.test.is_built_with_cuda())); print(tf.__version__)\ntry:\n import keras; print(keras.__version__)\nexcept Exception: print('none')")
  endif()
  if(Python3_Interpreter_FOUND AND _matex_tf_rc EQUAL 0)
    string(REPLACE "\n" ";" _matex_tf_lines "${_matex_tf_flags}")
    list(GET _matex_tf_lines 0 MATEX_TF_CFLAGS)
    list(GET _matex_tf_lines 1 MATEX_TF_LFLAGS)
    list(GET _matex_tf_lines 2 MATEX_TF_HAS_CUDA)
    list(GET _matex_tf_lines 3 MATEX_TF_VERSION)
    list(GET _matex_tf_lines 4 MATEX_KERAS_VERSION)
    matex_version_in_range(_matex_tf_ok "${MATEX_TF_VERSION}" ${MATEX_TF_MIN_VERSION} ${MATEX_TF_BELOW_VERSION})
    matex_version_in_range(_matex_keras_ok "${MATEX_KERAS_VERSION}" ${MATEX_KERAS_MIN_VERSION}
                           ${MATEX_KERAS_BELOW_VERSION})
    if(NOT _matex_tf_ok)
      string(CONCAT MATEX_TF_WHY "TensorFlow ${MATEX_TF_VERSION} (found by ${Python3_EXECUTABLE}) is outside "
                    "the supported range, ${MATEX_TF_MIN_VERSION} to below ${MATEX_TF_BELOW_VERSION}")
    elseif(NOT _matex_keras_ok)
      string(CONCAT MATEX_TF_WHY "Keras ${MATEX_KERAS_VERSION} (beside TensorFlow ${MATEX_TF_VERSION}) is outside "
                    "the supported range, ${MATEX_KERAS_MIN_VERSION} to below ${MATEX_KERAS_BELOW_VERSION}")
    else()
      set(MATEX_HAVE_TF ON)
      message(STATUS "TensorFlow ${MATEX_TF_VERSION} and Keras ${MATEX_KERAS_VERSION} found by ${Python3_EXECUTABLE} "
                     "(built with CUDA: ${MATEX_TF_HAS_CUDA})")
    endif()
  elseif(NOT Python3_Interpreter_FOUND)
    set(MATEX_TF_WHY "no Python interpreter found")
  else()
    set(MATEX_TF_WHY "`${Python3_EXECUTABLE} -c 'import tensorflow'` failed (${_matex_tf_flags_ERROR})")
  endif()
  if(NOT MATEX_HAVE_TF)
    matex_binding_skipped(MATEX_WITH_TF "TensorFlow binding" "${MATEX_TF_WHY}")
  endif()
endif()
