# matex_python_probe(<out> <result> <code>): runs `code` with the Python the
# bindings are built for (Python3_EXECUTABLE): its output, stripped, in
# <out>, its exit status in <result>, and the line of its error
# ("ModuleNotFoundError: ...") in <out>_ERROR. It sees the environment the
# user installs into, not pip's build environment: pip's isolated build sets PYTHONPATH to its own site folder
# (whose sitecustomize hides the environment's packages) and sets
# PYTHONNOUSERSITE; the probe drops both. pip replaces PYTHONPATH, so
# frameworks that only PYTHONPATH provides (some module systems) are seen
# only with --no-build-isolation, which leaves PYTHONPATH as it is.
function(matex_python_probe out result code)
  set(kept "")
  if(DEFINED ENV{PYTHONPATH})
    string(REPLACE ":" ";" entries "$ENV{PYTHONPATH}")
    foreach(entry IN LISTS entries)
      if(NOT entry MATCHES "pip-build-env-")
        list(APPEND kept "${entry}")
      endif()
    endforeach()
  endif()
  list(JOIN kept ":" kept)
  execute_process(
    COMMAND ${CMAKE_COMMAND} -E env --unset=PYTHONNOUSERSITE "PYTHONPATH=${kept}" ${Python3_EXECUTABLE} -c "${code}"
    OUTPUT_VARIABLE text RESULT_VARIABLE rc ERROR_VARIABLE errors OUTPUT_STRIP_TRAILING_WHITESPACE)
  set(${out} "${text}" PARENT_SCOPE)
  set(${result} "${rc}" PARENT_SCOPE)
  string(REGEX MATCH "[A-Za-z]*Error: [^\n]*" error "${errors}")
  set(${out}_ERROR "${error}" PARENT_SCOPE)
endfunction()
