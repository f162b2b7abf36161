# The MATEX_WITH_* switches take AUTO, ON or OFF. pip passes them from the
# environment at install time (pyproject.toml), where users write 0, 1 or
# auto as Horovod's HOROVOD_WITH_* taught them: those spellings, and CMake's
# other booleans, mean the same here. Anything else stops the configure step.
foreach(_matex_switch MATEX_WITH_CUDA MATEX_WITH_TF MATEX_WITH_TORCH MATEX_WITH_HWLOC)
  string(TOUPPER "${${_matex_switch}}" _matex_value)
  if(_matex_value MATCHES "^(1|ON|YES|TRUE|Y)$")
    set(_matex_value ON)
  elseif(_matex_value MATCHES "^(0|OFF|NO|FALSE|N)$")
    set(_matex_value OFF)
  elseif(_matex_value STREQUAL "" OR _matex_value STREQUAL "AUTO")
    set(_matex_value AUTO)
  else()
    message(FATAL_ERROR "${_matex_switch}=${${_matex_switch}}: use 1 (build it, or fail), 0 (skip it) or auto "
                        "(build it when found)")
  endif()
  set(${_matex_switch} ${_matex_value})  # shadows the cache entry, which keeps what the user wrote
endforeach()
