# matex_python_probe(<out> <result> <code>): runs `code` with the Python the
# bindings are built for (Python3_EXECUTABLE) and its output, stripped, in
# <out>. It sees the environment the user installs into, not pip's build
# environment: pip's isolated build puts its own site folder first on
# PYTHONPATH and hides the environment's packages (PYTHONNOUSERSITE); the
# probe drops both, keeping the rest of PYTHONPATH (a module system's
# frameworks live there).
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
  set(${out}_ERRORS "${errors}" PARENT_SCOPE)
endfunction()
