# MPI: the one the user's environment gives, as module systems set it up: the
# MPI compiler wrapper (mpicc) on PATH, or the prefix in MPI_HOME (a CMake
# variable or the environment's). Nothing is installed or guessed; without an
# MPI the configure step stops and says where it looked.
if(NOT DEFINED MPI_HOME AND DEFINED ENV{MPI_HOME})
  set(MPI_HOME "$ENV{MPI_HOME}")
endif()
find_package(MPI COMPONENTS C)
if(NOT MPI_C_FOUND)
  find_program(_matex_mpicc_seen NAMES mpicc NO_CACHE)
  if(NOT _matex_mpicc_seen)
    set(_matex_mpicc_seen "none")
  endif()
  if(DEFINED MPI_HOME)
    set(_matex_mpi_home "${MPI_HOME}")
  else()
    set(_matex_mpi_home "not set")
  endif()
  message(FATAL_ERROR "MPI was not found. libmatexcomm builds against the MPI your jobs run with. Looked for: "
                      "an MPI C compiler wrapper (mpicc) on PATH (found: ${_matex_mpicc_seen}) and an MPI "
                      "under MPI_HOME (${_matex_mpi_home}). Load your site's MPI (for example `module load "
                      "openmpi`), put its mpicc on PATH, or set MPI_HOME to its prefix; on Debian or Ubuntu "
                      "the packages are openmpi-bin and libopenmpi-dev.")
endif()
